"""The runtime: executes IR documents (engine, protocols, providers, middleware, sessions)."""
