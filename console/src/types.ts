/** The shapes the console reads from the dev server and from `auwgent serve`. */

export type IrType = { kind: string; [key: string]: unknown };

export interface ContextField {
  name: string;
  type: IrType;
  optional: boolean;
  description: string | null;
}

export interface AgentInfo {
  name: string;
  description: string | null;
  configs: string[];
  personas: string[];
  context: ContextField[];
  tools: { name: string; approval: boolean }[];
  helpers: string[];
  output: string;
  mode: "offline" | "live" | "app" | "error";
  mode_reason: string;
}

export interface Project {
  version: number;
  root: string;
  problems: string[];
  tracing: boolean;
  agents: AgentInfo[];
}

export interface ApprovalRequest {
  id: string;
  kind: string;
  name: string;
  args: Record<string, unknown>;
  agent: string;
}

export interface ModelCall {
  finish_reason: string | null;
  usage: { input_tokens?: number; output_tokens?: number; total_tokens?: number } | null;
  model: string | null;
}

export interface Turn {
  id: string;
  input: { text: string };
  agent: string;
  intents: { name: string; value: unknown; agent?: string }[];
  status: string;
  error: unknown;
  output: unknown;
  model_calls: ModelCall[];
}

export interface Session {
  agent: string;
  turns: Turn[];
  status?: string;
  pending_approvals?: ApprovalRequest[];
  [key: string]: unknown;
}

export interface SessionSummary {
  id: string;
  agent: string;
  turns: number;
  status: string | null;
  pending: number;
  first_input: string;
  pending_approvals: ApprovalRequest[];
}

export interface Span {
  name: string;
  id: string;
  parent: string | null;
  start: number;
  end: number;
  status: string;
  attributes: Record<string, unknown>;
}

export interface TurnRecord {
  turn: string;
  spans: Span[];
  requests: { kind: string; at: number; [key: string]: unknown }[];
}

export interface TestResult {
  name: string;
  file: string;
  line: number;
  passed: boolean;
  problems: string[];
  seconds: number;
  report: string | null;
}

export interface TestRun {
  ok: boolean;
  problems: string[];
  seconds?: number;
  results: TestResult[];
}
