// Generated from auwgent.ir.model (held equal to src/auwgent/ir/schema.json) by
// scripts/generate_ts_ir.py: do not edit. The IR document's shapes (docs/ir.md).

export interface Agent {
  name: string;
  kind: "agent" | "helper";
  description: string | null;
  configs: Record<string, Config>;
  context: Field[];
  input: Type;
  output: Type;
  tools: Tool[];
  workflows: Workflow[];
  helpers: HelperUse[];
  personas: string[];
  intents: Intent[];
  examples: Example[];
  dropped_examples: Example[];
  quarantine?: true;
}

export interface Approval {
  timeout: number | null;
}

export interface ArrayExpr {
  e: "array";
  items: Expr[];
}

export interface ArrayType {
  kind: "array";
  items: Type;
}

export interface BinaryExpr {
  e: "binary";
  op: "+" | "-" | "*" | "/" | "%" | "==" | "!=" | "<" | "<=" | ">" | ">=" | "&&" | "||";
  left: Expr;
  right: Expr;
}

export interface BindStmt {
  s: "let" | "assign";
  loc: Loc;
  name: string;
  value: Expr;
}

export type Block = Stmt[];

export interface CallExpr {
  e: "call";
  tool: string;
  args: NamedExpr[];
  loc: Loc;
}

export interface Config {
  model: Model;
  prompt: PromptPart[];
  embedding: Model | null;
  max_tool_loops: number | null;
  protocol: "blocks" | "native" | null;
  fallback?: Model[];
  codeMode?: boolean;
  taint?: TaintPolicy;
  maxToolOutput?: OutputCap;
  history?: History;
}

export interface Document {
  ir_version: 1;
  compiler_version: string;
  hash: string;
  source: string;
  root: string;
  agents: Record<string, Agent>;
  types: Record<string, ObjectType>;
  prompts: Record<string, NamedPrompt>;
  personas: Record<string, Persona>;
  mcp?: Record<string, McpServer>;
}

export interface Example {
  kind: "tool" | "workflow";
  target: string;
  args: Record<string, unknown>;
}

export type Expr = LitExpr | NameExpr | MemberExpr | IndexExpr | ArrayExpr | ObjectExpr | UnaryExpr | BinaryExpr | CallExpr;

export interface ExprStmt {
  s: "expr";
  loc: Loc;
  value: Expr;
}

export interface Field {
  name: string;
  type: Type;
  optional: boolean;
  description: string | null;
}

export interface HelperUse {
  name: string;
  tools: "none" | "all" | string[];
  handoff: "none" | "user" | "user_then_continue";
  approval?: Approval;
}

export interface History {
  keepLast?: number;
  compact?: "drop" | "summarize" | "clearToolResults";
  summarizeWith?: Model;
  trigger?: number;
}

export interface IfBranch {
  cond: Expr;
  body: Block;
}

export interface IfStmt {
  s: "if";
  loc: Loc;
  branches: IfBranch[];
  else: Block | null;
}

export interface IndexExpr {
  e: "index";
  object: Expr;
  index: Expr;
}

export interface Intent {
  name: string;
  description: string | null;
  fields: Field[];
}

export interface LitExpr {
  e: "lit";
  value: string | number | boolean | null;
}

export interface LiteralType {
  kind: "literal";
  value: string;
}

export type Loc = number[];

export interface McpHttpServer {
  url: string;
}

export type McpServer = McpStdioServer | McpHttpServer;

export interface McpStdioServer {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export interface MemberExpr {
  e: "member";
  object: Expr;
  name: string;
}

export interface Model {
  provider: "gemini" | "openai" | "anthropic" | "custom";
  model: string;
  options: Record<string, unknown>;
  id: string | null;
  base_url: string | null;
  name: string | null;
  contextWindow?: number;
  maxOutputTokens?: number;
}

export interface NameExpr {
  e: "name" | "ctx";
  name: string;
}

export interface NamedExpr {
  name: string;
  value: Expr;
}

export interface NamedPrompt {
  name: string;
  params: Field[];
  body: PromptBody;
}

export interface ObjectExpr {
  e: "object";
  fields: NamedExpr[];
}

export interface ObjectType {
  kind: "object";
  fields: Field[];
}

export interface OutputCap {
  tokens?: number;
  chars?: number;
}

export interface Persona {
  name: string;
  body: PromptBody;
}

export interface PrimitiveType {
  kind: "text" | "string" | "number" | "boolean";
}

export type PromptBody = PromptItem[];

export interface PromptExample {
  kind: "example";
  user: Template;
  assistant: Template;
}

export interface PromptIf {
  kind: "if";
  cond: Expr;
  then: PromptBody;
  else: PromptBody;
}

export interface PromptInline {
  kind: "inline";
  body: PromptBody;
  loc: Loc;
}

export type PromptItem = PromptText | PromptExample | PromptIf;

export type PromptPart = PromptRef | PromptInline;

export interface PromptRef {
  kind: "ref";
  name: string;
  args: Expr[];
  loc: Loc;
}

export interface PromptText {
  kind: "text";
  template: Template;
}

export interface RefType {
  kind: "ref";
  name: string;
}

export interface ReturnStmt {
  s: "return";
  loc: Loc;
  value: Expr | null;
}

export interface Sensitive {
  policy: "approve" | "refuse" | "allow" | null;
}

export type Stmt = BindStmt | IfStmt | ReturnStmt | ExprStmt;

export interface TExpr {
  t: "expr";
  expr: Expr;
}

export interface TIf {
  t: "if";
  cond: Expr;
  then: Template;
  else: Template;
}

export type TNode = TText | TExpr | TIf | TSchema;

export interface TSchema {
  t: "schema";
  target: "input" | "output" | "context";
}

export interface TText {
  t: "text";
  value: string;
}

export interface TaintPolicy {
  sensitive?: "approve" | "refuse" | "allow";
}

export type Template = TNode[];

export interface Tool {
  name: string;
  description: string | null;
  params: Field[];
  returns: Type;
  examples: Record<string, unknown>[];
  repeatable?: true;
  maxOutput?: OutputCap;
  approval?: Approval;
  untrusted?: true;
  sensitive?: Sensitive;
  mcp?: string;
  mcpTool?: string;
}

export type Type = PrimitiveType | LiteralType | ArrayType | ObjectType | RefType | UnionType;

export interface UnaryExpr {
  e: "unary";
  op: "!" | "-";
  operand: Expr;
}

export interface UnionType {
  kind: "union";
  variants: Type[];
}

export interface Workflow {
  name: string;
  description: string;
  params: Field[];
  returns: Type;
  tools: Tool[];
  body: Block;
  source: string;
  loc: Loc;
  examples: Record<string, unknown>[];
  approval?: Approval;
}
