// The manual's Getting Started and "Injecting context at runtime" TypeScript tabs, as printed.
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const config: AuwgentConfig = {
    apiKeys: {
        geminiApiKey: "YOUR_API_KEY"
    },
    context: {
        name: "Auwgent",
        is_vip: true
    }
}

const agent = auwgent(config)


agent.onIntent((name, value, agent) => {
    if (name === "response_text") {
        console.log(value.text)
    }

    if (name === "error") {
        console.error(value)
    }
})

// 2) Streaming partial updates (independent of onIntent)
// You can register this with or without onIntent.
agent.onIntentPartial((name, value, agentName) => {
    if (name === "response_text") {
        process.stdout.write(value.delta ?? "")
    }
})

await agent.run("hello")
