// The manual's "Workflows" TypeScript tabs, as printed.
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const remove_user = async (args: { id: string }) => {
    const { id } = args
    // your implementation here
    return `deleted user ${id}`
}

const get_user = async (args: { id: string }) => {
    const { id } = args
    // your implementation here
    return `user ${id}`
}

const config: AuwgentConfig = {
    apiKeys: {
        geminiApiKey: "YOUR_API_KEY"
    },
    context: {
        is_admin: true,
        user_id: "user_1"
    },
    tools: {
        get_user,
        remove_user
    }
}

const agent = auwgent(config)

agent.onIntent((name, value, agentName) => {
    if (name === "workflow_call") {
        console.log("workflow triggered:", value.type)
    }

    if (name === "workflow_result") {
        console.log("workflow result:", value)
    }
    if (name === "tool_error") console.log("tool_error:", value.tool, value.message)
    if (name === "tool_result") console.log("tool_result:", value.name)
    if (name === "response_text") console.log("answer:", value.text)
})

await agent.run("Delete user_1")
