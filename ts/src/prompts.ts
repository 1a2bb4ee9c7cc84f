// Prompt evaluation: a config's prompt parts and the context in, the system prompt text out
// (docs/ir.md, "Prompts"; docs/prompts.md). Lenient: a missing value renders as empty.

import { evaluate, renderValue, truthy, unknownKind, type IRExpr } from "./expr.js";
import type { Agent, Config, Document, PromptItem, TNode, TText } from "./ir.js";
import { describe, describeFields, type Types } from "./schema.js";
type SchemaText = (target: string) => string;

const SEPARATOR = "\n\n";

export function renderTemplate(nodes: TNode[], scope: Record<string, any>, ctx: Record<string, any>, schemaText: SchemaText): string {
  const out: string[] = [];
  let dropLineBreak = false;
  nodes.forEach((node, i) => {
    const kind = node.t;
    if (kind === "text") {
      let text: string = node.value;
      if (dropLineBreak) text = text.replace(/^[ \t]*(?:\r?\n|$)/, "");
      out.push(text);
    } else if (kind === "expr") {
      out.push(renderValue(evaluate(node.expr, scope, ctx, false)));
    } else if (kind === "if") {
      const chosen = truthy(evaluate(node.cond, scope, ctx, false)) ? node.then : node.else;
      const rendered = renderTemplate(chosen, scope, ctx, schemaText);
      out.push(trimBranch(rendered, indentBefore(out.length ? out[out.length - 1]! : "")));
      if (out[out.length - 1] === "" && aloneOnLines(nodes, i)) {
        if (out.length >= 2) out[out.length - 2] = out[out.length - 2]!.replace(/[ \t]+$/, "");
        dropLineBreak = true;
        return;
      }
    } else if (kind === "schema") {
      out.push(schemaText(node.target));
    } else {
      unknownKind("template node", node, "t");
    }
    dropLineBreak = false;
  });
  return out.join("");
}

function trimBranch(text: string, indent: string): string {
  if (!(text.startsWith("\n") || text.startsWith("\r\n"))) return text;
  text = text.startsWith("\r\n") ? text.slice(2) : text.slice(1);
  const lines = dedent(text.replace(/\r?\n[ \t]*$/, "")).split("\n");
  return [lines[0]!, ...lines.slice(1).map((line) => (line.trim() ? indent + line : line))].join("\n");
}

/** Python's textwrap.dedent: remove the common leading whitespace of non-blank lines. */
export function dedent(text: string): string {
  const lines = text.split("\n");
  // Lines of whitespace only are normalised to empty, as textwrap does.
  const normal = lines.map((l) => (/^[ \t]+$/.test(l) ? "" : l));
  let margin: string | null = null;
  for (const line of normal) {
    if (!line) continue;
    const ws = /^[ \t]*/.exec(line)![0];
    if (margin === null) margin = ws;
    else if (ws.startsWith(margin)) continue;
    else if (margin.startsWith(ws)) margin = ws;
    else {
      let k = 0;
      while (k < margin.length && k < ws.length && margin[k] === ws[k]) k++;
      margin = margin.slice(0, k);
    }
  }
  if (!margin) return normal.join("\n");
  return normal.map((l) => (l.startsWith(margin!) ? l.slice(margin!.length) : l)).join("\n");
}

function indentBefore(text: string): string {
  const m = /(?:^|\n)([ \t]*)$/.exec(text);
  return m ? m[1]! : "";
}

const EMPTY_TEXT: TText = { t: "text", value: "" };

function aloneOnLines(nodes: TNode[], i: number): boolean {
  const before = i > 0 ? nodes[i - 1]! : EMPTY_TEXT;
  const after = i + 1 < nodes.length ? nodes[i + 1]! : EMPTY_TEXT;
  if (before.t !== "text" || after.t !== "text") return false;
  return /(?:^|\n)[ \t]*$/.test(before.value) && /^[ \t]*(?:\r?\n|$)/.test(after.value);
}

export function renderExample(user: string, assistant: string): string {
  return `Example:\nUser: ${user}\nAssistant: ${assistant}`;
}

export function renderBody(items: PromptItem[], scope: Record<string, any>, ctx: Record<string, any>, schemaText: SchemaText): string {
  const parts: string[] = [];
  for (const item of items) {
    let text: string;
    if (item.kind === "text") text = renderTemplate(item.template, scope, ctx, schemaText);
    else if (item.kind === "example")
      text = renderExample(renderTemplate(item.user, scope, ctx, schemaText), renderTemplate(item.assistant, scope, ctx, schemaText));
    else if (item.kind === "if") {
      const chosen = truthy(evaluate(item.cond, scope, ctx, false)) ? item.then : item.else;
      text = renderBody(chosen, scope, ctx, schemaText);
    } else throw new Error(`unknown prompt item '${(item as { kind: string }).kind}'`);
    if (text.trim()) parts.push(text);
  }
  return parts.join(SEPARATOR);
}

export function schemaTextFor(doc: Document, agent: Agent): SchemaText {
  const types: Types = doc.types ?? {};
  return (target: string) => {
    if (target === "context") {
      const body = describeFields(agent.context ?? [], types, { expand: true, notes: true });
      return body ? `{ ${body} }` : "{}";
    }
    if (target === "input" || target === "output")
      return describe(agent[target] ?? { kind: "text" }, types, { expand: true, notes: true });
    throw new Error(`unknown schema target '${target}'`);
  };
}

export function renderPrompt(doc: Document, agent: Agent, config: Config, ctx: Record<string, any>): string {
  const schemaText = schemaTextFor(doc, agent);
  const parts: string[] = [];
  for (const part of config.prompt ?? []) {
    let text: string;
    if (part.kind === "ref") {
      const prompt = doc.prompts[part.name];
      const values = (part.args ?? []).map((arg: IRExpr) => evaluate(arg, {}, ctx, false));
      const scope: Record<string, any> = {};
      (prompt.params ?? []).forEach((p, i) => (scope[p.name] = i < values.length ? values[i] : null));
      text = renderBody(prompt.body, scope, ctx, schemaText);
    } else if (part.kind === "inline") text = renderBody(part.body, {}, ctx, schemaText);
    else throw new Error(`unknown prompt part '${(part as { kind: string }).kind}'`);
    if (text.trim()) parts.push(text);
  }
  return parts.join(SEPARATOR);
}

export function referencedContextKeys(doc: Document, config: Config): Set<string> {
  const keys = new Set<string>();
  const expr = (e: any): void => {
    if (!e || typeof e !== "object") return;
    if (e.e === "ctx") keys.add(e.name);
    for (const k of ["object", "index", "operand", "left", "right"]) if (e[k]) expr(e[k]);
    for (const item of e.items ?? []) expr(item);
    for (const f of [...(e.fields ?? []), ...(e.args ?? [])]) expr(f.value);
  };
  const nodes = (list: TNode[]): void => {
    for (const n of list) {
      if (n.t === "expr") expr(n.expr);
      else if (n.t === "if") {
        expr(n.cond);
        nodes(n.then);
        nodes(n.else);
      }
    }
  };
  const items = (list: PromptItem[]): void => {
    for (const it of list) {
      if (it.kind === "text") nodes(it.template);
      else if (it.kind === "example") {
        nodes(it.user);
        nodes(it.assistant);
      } else if (it.kind === "if") {
        expr(it.cond);
        items(it.then);
        items(it.else);
      }
    }
  };
  for (const part of config.prompt ?? []) {
    if (part.kind === "ref") {
      for (const arg of part.args ?? []) expr(arg);
      items(doc.prompts[part.name].body);
    } else items(part.body);
  }
  return keys;
}
