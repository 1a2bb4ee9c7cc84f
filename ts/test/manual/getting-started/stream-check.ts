// Not a manual tab: checks that agent.stream() narrows its events by name (type-checked only).
import { auwgent } from "./generated/main.agent.types"

const agent = auwgent({ apiKeys: { geminiApiKey: "k" }, context: { name: "A", is_vip: false } })
for await (const event of agent.stream("hi")) {
    if (event.name === "response_text" && !event.partial) console.log(event.value.text.toUpperCase())
    if (event.name === "response_text" && event.partial) console.log(event.value.delta)
}
