// `@mcp` tools at run time: one connection per MCP server, opened by the first call and reused
// (the Python runtime's src/auwgent/runtime/mcp.py, with the same config keys and wording).
//
// A call to an `@mcp` tool takes the path of every call (scoping, the `tool_call` intent with
// its handlers and middleware, argument validation, the result intents); only its last step,
// running the implementation, comes here: `McpServers.implementations()` gives the tool registry
// one function per `@mcp` tool, which sends the validated arguments to the server with the
// official SDK, `@modelcontextprotocol/sdk` (an optional peer: `npm install
// @modelcontextprotocol/sdk`). Starting a server (launching it or reaching its URL, and the
// initialize handshake) is bounded by its `startTimeout` (60 s), each call once connected by
// its `timeout` (10 s). Every failure is an `McpError` naming the server, which the engine
// reports to the model as `tool_error`; `agent.close()` closes the connections.

import { createRequire } from "node:module";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { closest } from "./config.js";
import { ConfigError, ToolError } from "./errors.js";
import type { Document, McpServer, Tool } from "./ir.js";
import { resolve, type IRType, type Types } from "./schema.js";
import { pyJson, pyRepr, pyTypeName, pyValueRepr } from "./values.js";

export const DEFAULT_TIMEOUT = 10;
export const DEFAULT_START_TIMEOUT = 60;
const SDK = "@modelcontextprotocol/sdk";
const INSTALL = `npm install ${SDK}`;
const OPTION_KEYS = ["env", "headers", "timeout", "startTimeout"] as const;
const CLOSE_GRACE_MS = 5000;

/** An `@mcp` tool's server failed: it did not start, died, timed out or answered with an
 * error. The message begins with the server's name (as the Python runtime's McpError). */
export class McpError extends ToolError {
  constructor(
    public server: string,
    public detail: string,
  ) {
    super(`MCP server ${server}: ${detail}`);
  }
}

/** One server's part of the runtime config's `"mcp"` (every key optional). */
export interface McpServerConfig {
  /** For a server launched by command, merged over its declaration's `env`. */
  env?: Record<string, string>;
  /** For a server reached by url: sent with every HTTP request (tokens). */
  headers?: Record<string, string>;
  /** Seconds per call once the server is up (default 10). */
  timeout?: number;
  /** Seconds to launch (or connect) and initialize it (default 60). */
  startTimeout?: number;
}

export interface ServerOptions {
  env: Record<string, string>;
  headers: Record<string, string>;
  timeout: number;
  startTimeout: number;
}

// ---------------------------------------------------------------------------------------------
// The config

/** The checked `"mcp"` config for the document's `servers` (every server has options). */
export function parseMcpOptions(value: unknown, servers: Record<string, McpServer>): Record<string, ServerOptions> {
  const options: Record<string, ServerOptions> = {};
  for (const name of Object.keys(servers)) options[name] = defaults();
  if (value === undefined || value === null) return options;
  if (!isObject(value)) throw new ConfigError(`mcp: expected an object of servers, got ${pyTypeName(value)}`);
  for (const [name, entry] of Object.entries(value)) {
    const spec = servers[name];
    if (spec === undefined) {
      const known = Object.keys(servers);
      const close = closest(name, known);
      const tip = close !== null ? `did you mean ${pyRepr(close)}?` : `declared servers: ${known.join(", ") || "none"}`;
      throw new ConfigError(`mcp.${name}: no MCP server named ${pyRepr(name)} is declared; ${tip}`);
    }
    options[name] = serverOptions(`mcp.${name}`, entry, spec);
  }
  return options;
}

function defaults(): ServerOptions {
  return { env: {}, headers: {}, timeout: DEFAULT_TIMEOUT, startTimeout: DEFAULT_START_TIMEOUT };
}

function serverOptions(path: string, entry: unknown, spec: McpServer): ServerOptions {
  if (!isObject(entry)) throw new ConfigError(`${path}: expected an object, got ${pyTypeName(entry)}`);
  for (const key of Object.keys(entry))
    if (!(OPTION_KEYS as readonly string[]).includes(key)) throw new ConfigError(`${path}.${key}: unknown key (valid keys: ${OPTION_KEYS.join(", ")})`);
  const env = strings(`${path}.env`, entry.env);
  const headers = strings(`${path}.headers`, entry.headers);
  const byUrl = "url" in spec;
  if (Object.keys(env).length && byUrl) throw new ConfigError(`${path}.env: the server is reached by url; use headers for its secrets`);
  if (Object.keys(headers).length && !byUrl) throw new ConfigError(`${path}.headers: the server is launched by command; use env instead`);
  const timeout = seconds(`${path}.timeout`, "timeout" in entry ? entry.timeout : DEFAULT_TIMEOUT);
  const startTimeout = seconds(`${path}.startTimeout`, "startTimeout" in entry ? entry.startTimeout : DEFAULT_START_TIMEOUT);
  return { env, headers, timeout, startTimeout };
}

function seconds(path: string, value: unknown): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0)
    throw new ConfigError(`${path}: expected a positive number of seconds, got ${pyValueRepr(value)}`);
  return value;
}

function strings(path: string, value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === "string")) throw new ConfigError(`${path}: expected an object of strings`);
  return { ...(value as Record<string, string>) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Seconds as Python's `{value:g}` writes them (3, 0.5, 1e-05). */
export function gSeconds(value: number): string {
  const exponent = value === 0 ? 0 : Math.floor(Math.log10(Math.abs(value)));
  if (exponent < -4 || exponent >= 6) {
    const [mantissa, exp] = Number(value.toPrecision(6)).toExponential().split("e") as [string, string];
    const power = Number(exp);
    return `${mantissa}e${power < 0 ? "-" : "+"}${String(Math.abs(power)).padStart(2, "0")}`;
  }
  return String(Number(value.toPrecision(6)));
}

// ---------------------------------------------------------------------------------------------
// The document's servers

/** Every `@mcp` tool of the document by name (agents' and workflows' scoped tools). */
export function mcpTools(doc: Document): Map<string, Tool> {
  const found = new Map<string, Tool>();
  for (const agent of Object.values(doc.agents)) {
    const tools = [...agent.tools, ...agent.workflows.flatMap((w) => w.tools)];
    for (const tool of tools) if (tool.mcp && !found.has(tool.name)) found.set(tool.name, tool);
  }
  return found;
}

/** Whether the MCP SDK can be loaded (it is an optional peer). */
function sdkInstalled(): boolean {
  try {
    createRequire(import.meta.url).resolve(`${SDK}/client/index.js`);
    return true;
  } catch {
    return false;
  }
}

type Implementation = (args: Record<string, unknown>) => Promise<unknown>;

/** The document's MCP servers and their connections (one per server). */
export class McpServers {
  readonly servers: Record<string, McpServer>;
  readonly options: Record<string, ServerOptions>;
  readonly tools: Map<string, Tool>;
  private types: Types;
  private connections = new Map<string, McpConnection>();

  constructor(doc: Document, config: unknown) {
    this.types = doc.types;
    this.servers = doc.mcp ?? {};
    this.options = parseMcpOptions(config, this.servers);
    this.tools = mcpTools(doc);
    for (const [name, tool] of this.tools)
      if (!Object.hasOwn(this.servers, String(tool.mcp))) throw new ConfigError(`ir: tool ${name} names MCP server ${pyRepr(String(tool.mcp))}, which the IR does not declare`);
    if (this.tools.size && !sdkInstalled()) throw new ConfigError(`mcp: the agent has @mcp tools; install the MCP SDK: ${INSTALL}`);
  }

  /** One function per `@mcp` tool, called with the validated arguments. */
  implementations(): Map<string, Implementation> {
    const out = new Map<string, Implementation>();
    for (const [name, tool] of this.tools) {
      const server = String(tool.mcp);
      const remote = tool.mcpTool || name; // the server's own name for it
      out.set(name, (args) => this.call(server, remote, args, tool.returns));
    }
    return out;
  }

  /** Call `tool` on `server`; its value shaped for the declared `returns`. */
  async call(server: string, tool: string, args: Record<string, unknown>, returns: IRType): Promise<unknown> {
    const result = await this.connection(server).callTool(tool, args);
    if (result.isError) throw new McpError(server, `tool ${tool} answered with an error: ${textOf(result) || "?"}`);
    return valueOf(result, returns, this.types);
  }

  connection(server: string): McpConnection {
    let found = this.connections.get(server);
    if (!found) {
      found = new McpConnection(server, this.servers[server]!, this.options[server]!);
      this.connections.set(server, found);
    }
    return found;
  }

  /** Close every connection (launched servers are stopped). */
  async close(): Promise<void> {
    const connections = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(connections.map((c) => c.close()));
  }
}

// ---------------------------------------------------------------------------------------------
// One connection

/** What a server answers to `tools/call` (the fields this module reads). */
export interface CallResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

interface ContentBlock {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** A live connection: the SDK client, a promise settled when it ends, and how to end an HTTP
 * server's session (the DELETE Python's SDK sends when it leaves). */
interface Live {
  client: Client;
  ended: Promise<void>;
  terminate: () => Promise<void>;
}

type Sdk = {
  Client: typeof import("@modelcontextprotocol/sdk/client/index.js").Client;
  StdioClientTransport: typeof import("@modelcontextprotocol/sdk/client/stdio.js").StdioClientTransport;
  StreamableHTTPClientTransport: typeof import("@modelcontextprotocol/sdk/client/streamableHttp.js").StreamableHTTPClientTransport;
};

let sdk: Promise<Sdk> | null = null;

function loadSdk(): Promise<Sdk> {
  sdk ??= Promise.all([
    import("@modelcontextprotocol/sdk/client/index.js"),
    import("@modelcontextprotocol/sdk/client/stdio.js"),
    import("@modelcontextprotocol/sdk/client/streamableHttp.js"),
  ]).then(([client, stdio, http]) => ({ Client: client.Client, StdioClientTransport: stdio.StdioClientTransport, StreamableHTTPClientTransport: http.StreamableHTTPClientTransport }));
  return sdk;
}

/** One server: the SDK client held open, and the calls made through it. */
export class McpConnection {
  private live: Promise<Live> | null = null;
  /** What `live` resolved to, once it did. */
  private opened: Live | null = null;

  constructor(
    readonly name: string,
    readonly spec: McpServer,
    readonly options: ServerOptions,
  ) {}

  /** The server's `CallToolResult`; `McpError` for every way the server can fail. */
  callTool(tool: string, args: Record<string, unknown>): Promise<CallResult> {
    return this.request(`tool ${tool}`, (client, signal, timeout) => client.callTool({ name: tool, arguments: args }, undefined, { signal, timeout }) as Promise<CallResult>);
  }

  /** Every tool the server lists, page after page (as `auwgent mcp import` reads them). */
  listTools(): Promise<Array<{ name: string; [key: string]: unknown }>> {
    return this.request("the tool list", async (client, signal, timeout) => {
      const tools: Array<{ name: string; [key: string]: unknown }> = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { signal, timeout });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  /** `send(client)` on the connected client: connecting bounded by the server's
   * `startTimeout`, the request itself by its `timeout`; `McpError` naming `what` when the
   * server fails. A connection that failed under a request is dropped: the next starts afresh. */
  async request<T>(what: string, send: (client: Client, signal: AbortSignal, timeoutMs: number) => Promise<T>): Promise<T> {
    const live = await this.started();
    const seconds = this.options.timeout;
    const abort = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new McpError(this.name, `no answer for ${what} within ${gSeconds(seconds)} s`)), seconds * 1000);
    });
    try {
      // A server that dies under the call: the SDK rejects it ("Connection closed").
      return await Promise.race([send(live.client, abort.signal, this.sdkTimeoutMs()), late]);
    } catch (error) {
      abort.abort();
      this.discard(live);
      if (error instanceof McpError) throw error;
      throw new McpError(this.name, `${what} failed: ${describe(error)}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The SDK's own bound on each request: never shorter than ours (ours decides). */
  private sdkTimeoutMs(): number {
    return Math.max(this.options.timeout, this.options.startTimeout) * 1000 + 1000;
  }

  /** The live connection, connecting first when needed, within the `startTimeout`; a server
   * that does not start in time is stopped. */
  private started(): Promise<Live> {
    if (this.live === null) {
      const connecting = this.connect();
      this.live = connecting;
      connecting.then(
        (live) => {
          this.opened = live;
          // A server that ends (it died, or was closed) is started again by the next call.
          void live.ended.then(() => this.forget(live));
        },
        () => {
          if (this.live === connecting) this.live = null;
        },
      );
    }
    return this.live;
  }

  private async connect(): Promise<Live> {
    const { Client, StdioClientTransport, StreamableHTTPClientTransport } = await loadSdk();
    const spec = this.spec;
    let transport: Transport;
    let http: InstanceType<typeof StreamableHTTPClientTransport> | null = null;
    if ("url" in spec) transport = http = new StreamableHTTPClientTransport(new URL(spec.url), { requestInit: { headers: { ...this.options.headers } } });
    else
      transport = new StdioClientTransport({
        command: String(spec.command),
        args: (spec.args ?? []).map(String),
        env: { ...(spec.env ?? {}), ...this.options.env },
        stderr: "inherit",
      });
    const client = new Client({ name: "auwgent", version: "0.1.0" });
    let end: () => void = () => undefined;
    const ended = new Promise<void>((done) => (end = done));
    const seconds = this.options.startTimeout;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new McpError(this.name, `did not start within ${gSeconds(seconds)} s (launch and initialize; the limit is mcp.${this.name}.startTimeout)`)),
        seconds * 1000,
      );
    });
    try {
      await Promise.race([client.connect(transport, { timeout: this.sdkTimeoutMs() }), late]);
    } catch (error) {
      void quietly(client.close());
      if (error instanceof McpError) throw error;
      throw new McpError(this.name, `could not connect: ${describe(error)}`);
    } finally {
      clearTimeout(timer);
    }
    client.onclose = end;
    client.onerror = () => undefined; // a failed request reports itself; the rest changes nothing
    return { client, ended, terminate: async () => (http?.sessionId ? http.terminateSession() : undefined) };
  }

  /** Forget `live` when it is the current connection: the next call connects afresh. */
  private forget(live: Live): void {
    if (this.opened !== live) return;
    this.opened = null;
    this.live = null;
  }

  /** Forget `live` and close it (a launched process is stopped). */
  private discard(live: Live): void {
    this.forget(live);
    void quietly(live.client.close());
  }

  /** Close the connection: the transport ends, which stops a launched server. */
  async close(): Promise<void> {
    const live = this.live;
    this.live = this.opened = null;
    if (live === null) return;
    let opened: Live;
    try {
      opened = await live;
    } catch {
      return; // it never connected: nothing to close
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((done) => (timer = setTimeout(done, CLOSE_GRACE_MS)));
    await Promise.race([quietly(opened.terminate()).then(() => quietly(opened.client.close())), grace]);
    clearTimeout(timer);
  }
}

async function quietly(done: Promise<unknown>): Promise<void> {
  try {
    await done;
  } catch {
    // a server failing while it shuts down changes nothing for the caller
  }
}

/** The useful message of an error: the type and text, as the Python runtime words them (an
 * executable that is not there is Python's FileNotFoundError; the SDK's own McpError is
 * Python's SDK's MCPError, without the "MCP error <code>: " prefix that Python's does not
 * write: "MCPError: Connection closed"). */
export function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const os = error as Error & { code?: unknown; path?: unknown; syscall?: unknown };
  if (typeof os.syscall === "string" && os.syscall.startsWith("spawn") && typeof os.path === "string") {
    if (os.code === "ENOENT") return `FileNotFoundError: [Errno 2] No such file or directory: ${pyRepr(os.path)}`;
    if (os.code === "EACCES") return `PermissionError: [Errno 13] Permission denied: ${pyRepr(os.path)}`;
  }
  const refused = connectFailure(error);
  if (refused !== null) return refused;
  if (error.name === "McpError" && !(error instanceof McpError)) return `MCPError: ${error.message.replace(/^MCP error -?\d+: /, "")}`;
  return error.message ? `${error.name}: ${error.message}` : error.name;
}

/** A URL that could not be reached, as httpx words it for the Python runtime's SDK
 * (`ConnectError: All connection attempts failed` for a refused connection); null when
 * `error` is not that. */
function connectFailure(error: Error): string | null {
  const cause = (error as Error & { cause?: { code?: unknown; message?: unknown } }).cause;
  if (!(error instanceof TypeError) || !cause || typeof cause !== "object") return null;
  const code = String(cause.code ?? "");
  if (code === "ECONNREFUSED") return "ConnectError: All connection attempts failed";
  if (/^(ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT)$/.test(code)) return `ConnectError: ${String(cause.message ?? code)}`;
  return null;
}

function textOf(result: CallResult): string {
  return result.content
    .filter((b) => b.type === "text")
    .map((b) => String(b.text ?? ""))
    .join("\n");
}

/**
 * What a tool of the declared `returns` type gives back from an MCP `CallToolResult`: a string
 * tool gets the text; a structured one the structured content (unwrapped from the
 * `{"result": ...}` object servers put around a value that is not an object), else the text,
 * which the call path decodes and validates like any tool's JSON text. Content that is not
 * text (images, resources) is passed on as its JSON form.
 */
function valueOf(result: CallResult, returns: IRType, types: Types): unknown {
  const kind = resolve(returns, types).kind;
  const structured = result.structuredContent;
  if (kind !== "string" && kind !== "literal" && structured !== undefined && structured !== null) {
    const keys = isObject(structured) ? Object.keys(structured) : [];
    if (kind !== "object" && keys.length === 1 && keys[0] === "result") return structured.result;
    return structured;
  }
  if (result.content.every((b) => b.type === "text")) {
    const text = textOf(result);
    if (!text && structured !== undefined && structured !== null) return pyJson(structured, ", ", ": ");
    return text;
  }
  return result.content.map((b) => Object.fromEntries(Object.entries(b).filter(([, v]) => v !== null && v !== undefined)));
}
