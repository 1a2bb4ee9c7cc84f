// The manual's "Middleware" TypeScript tab ("Putting it together"), as printed, after the
// stand-ins it assumes (a database, a logger and the user's id).
const saved = new Map<string, unknown>()
const db = {
    users: { get: async (id: string) => ({ name: "Ama", plan: "premium" }) },
    sessions: {
        get: async (id: string) => saved.get(id) as any,
        save: async (id: string, session: unknown) => { saved.set(id, session) }
    }
}
const logger = { log: (entry: { traceId: string, duration: number }) => console.log("trace", typeof entry.traceId, entry.duration >= 0) }
const userId = "user_1"

import { auwgent, AuwgentConfig, Middleware, IR } from "./generated/main.agent.types"

const sessionMiddleware: Middleware = {
    name: "session-persistence",
    onRunStart: async (session, ctx) => {
        const user = await db.users.get(userId)
        ctx.setContext({ name: user.name, is_vip: user.plan === "premium" })
        const saved = await db.sessions.get(userId)
        return saved || session
    },
    onRunComplete: async (session, ctx) => {
        await db.sessions.save(userId, session)
    }
}

const observabilityMiddleware: Middleware = {
    name: "observability",
    onRunStart: async (session, ctx) => {
        ctx.traceId = crypto.randomUUID()
        ctx.startTime = Date.now()
        return session
    },
    onRunComplete: async (session, ctx) => {
        logger.log({
            traceId: ctx.traceId,
            duration: Date.now() - ctx.startTime
        })
    }
}

// "Scoping middleware to a specific helper", as printed.
const researcherMiddleware: Middleware<IR, never, any, any, "Researcher"> = {
    name: "researcher-middleware",
    target: "Researcher",
    onLLMStart: (prompt, ctx) => {
        // ctx.activeAgent is typed as "Researcher" here
        const active: "Researcher" = ctx.activeAgent
        console.log("researcher onLLMStart:", active)
    }
}

const config: AuwgentConfig = {
    apiKeys: {
        geminiApiKey: "YOUR_API_KEY"
    },
    middleware: [sessionMiddleware, observabilityMiddleware, researcherMiddleware]
}

const agent = auwgent(config)

await agent.run("Hello")
await agent.run("Hello again")
console.log("turns saved:", (saved.get(userId) as any).turns.length)
