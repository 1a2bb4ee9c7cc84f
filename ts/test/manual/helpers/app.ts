// The manual's "Helpers" TypeScript tab ("Knowing who is speaking"), as printed, over three
// runs: the default mode, `handoff user then continue`, and `handoff user` resumed next run.
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const config: AuwgentConfig = {
    apiKeys: {
        geminiApiKey: "YOUR_API_KEY"
    },
    tools: {
        db_query: async (args: { filter: string }) => `3 rows for ${args.filter}`
    }
}

const agent = auwgent(config)

agent.onIntent((name, value, agentName) => {
    if (name === "helper_call") {
        console.log(`helper invoked: ${agentName}`)
    }

    if (name === "helper_result") {
        console.log(`helper finished: ${agentName}`, value)
    }

    if (name === "response_text") {
        console.log(`${agentName} says:`, value.text)
    }

    if (name === "response_schema") {
        console.log(`${agentName} returned structured output:`, value)
    }
})

let session = await agent.run("Analyse low stock")
session = await agent.run("Say hello", { session })
session = await agent.run("I was charged twice", { session })
console.log("stack after handoff:", session.stack.map((f) => f.agent).join(","))
session = await agent.run("It was invoice 42", { session })
console.log("stack after completion:", session.stack.map((f) => f.agent).join(","))
