// The weather agent (../weather/main.agent) from TypeScript, as the manual's TypeScript tabs
// wire it. With GEMINI_API_KEY set it talks to Gemini; without it, a stand-in model below
// answers (a tool call, then a sentence), so the demo runs anywhere.
import type { ModelRequest, Provider, StreamEvent } from "auwgent"
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const standIn: Provider = {
    name: "stand-in",
    async *stream(request: ModelRequest): AsyncGenerator<StreamEvent> {
        const last = request.messages.at(-1)!.content
        const text = last.startsWith("[tool_result")
            ? `[response_text]\nHere is what I found: ${last.split("\n")[2]}\n[/response_text]`
            : "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"
        yield { type: "text", text }
        yield { type: "finish", reason: "stop" }
    },
    embed: async () => [],
}

const key = process.env.GEMINI_API_KEY
const config: AuwgentConfig = {
    apiKeys: { geminiApiKey: key ?? "not-needed-for-the-stand-in" },
    context: { is_admin: false },
    tools: {
        get_weather: async ({ location }) => ({ temperature: 28, condition: `sunny in ${location}` }),
        get_location: async () => "Accra",
    },
    ...(key ? {} : { provider: standIn }),
}

const agent = auwgent(config)
console.log(key ? "running on Gemini" : "running on the stand-in model (set GEMINI_API_KEY for Gemini)")

agent.onIntent((name, value, agentName) => {
    if (name === "tool_call") console.log(`[${agentName}] tool_call: ${value.type} ${JSON.stringify(value.args)}`)
    if (name === "tool_result") console.log(`[${agentName}] tool_result: ${JSON.stringify(value.result)}`)
    if (name === "response_text") console.log(`[${agentName}] response_text: ${value.text}`)
    if (name === "error") console.error(`[${agentName}] error: ${value.message}`)
})

const session = await agent.run(process.argv[2] ?? "What is the weather in Accra?")
console.log(`turn status: ${session.turns.at(-1)!.status}`)
