// The manual's "Custom Intents" TypeScript tab, as printed.
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const agent = auwgent({ apiKeys: { geminiApiKey: "YOUR_API_KEY" } } satisfies AuwgentConfig)

agent.onIntent((name, value, agentName) => {
    if (name === "Planning") {
        console.log("step:", value.step)
        console.log("confidence:", value.confidence)
    }

    if (name === "Dialogue") {
        console.log("tone:", value.tone)
        console.log("summary:", value.summary)
    }
})

await agent.run("Plan my week")
