// Must NOT type-check: a context value of the wrong type, and a missing API key field.
import { auwgent, AuwgentConfig } from "./generated/main.agent.types"

const wrongContext: AuwgentConfig = {
    apiKeys: { geminiApiKey: "k" },
    context: { name: "Auwgent", is_vip: "yes" },
}

const missingKey: AuwgentConfig = {
    apiKeys: {},
}

auwgent(wrongContext)
auwgent(missingKey)
