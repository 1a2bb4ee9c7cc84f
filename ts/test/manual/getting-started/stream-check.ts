// Not a manual tab: checks that agent.stream() narrows its events by name, and that run() and
// stream() take a list of input parts (type-checked only).
import { image, text } from "auwgent"
import { auwgent } from "./generated/main.agent.types"

const agent = auwgent({ apiKeys: { geminiApiKey: "k" }, context: { name: "A", is_vip: false } })
for await (const event of agent.stream("hi")) {
    if (event.name === "response_text" && !event.partial) console.log(event.value.text.toUpperCase())
    if (event.name === "response_text" && event.partial) console.log(event.value.delta)
}
await agent.run([text("What is in this picture?"), image("https://example.com/cat.png")])
for await (const event of agent.stream([{ type: "image", data: "iVBORw0=", media_type: "image/png" }])) console.log(event.name)
