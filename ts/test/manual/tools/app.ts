// The manual's "Tools" TypeScript tabs, as printed (plus the key field of the model used).
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const get_weather = async (args: { location: string }) => {
    const { location } = args
    // your implementation here
    return JSON.stringify({ temperature: 28, condition: "sunny" })
}

const config: AuwgentConfig = {
    apiKeys: {
        openaiApiKey: "YOUR_API_KEY"
    },
    tools: {
        get_weather
    }
}

const agent = auwgent(config)

agent.onIntent((name, value, agentName) => {
    if (name === "tool_call" && value.type === "delete_records") {
        console.log("Skipping dangerous tool call")
        return { skip: true }
    }
})

agent.onIntent(async (name, value) => {
    if (name === "tool_call" && value.type === "get_forecast") {
        return { result: "Sunny, 28°C" }
    }
})

agent.onIntent((name, value) => {
    if (name === "tool_result") console.log("tool_result:", value.name, JSON.stringify(value.result))
    if (name === "tool_skipped") console.log("tool_skipped:", value.type)
    if (name === "response_text") console.log("answer:", value.text)
})

await agent.run("What is the weather in Accra?")
