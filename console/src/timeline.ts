/** The live timeline: a run's stream of events folded into one item per intent, partials
 * filling an item in until its final event replaces them (see docs/serve.md, "The stream"). */

import type { ModelCall, Session, Turn } from "./types";

export interface Item {
  key: number;
  name: string;
  agent: string;
  value: unknown;
  /** Still partial: `text` holds the deltas so far (text), or `value` the latest snapshot. */
  partial: boolean;
  text: string;
  /** The run (1, 2, ...) of the conversation the item belongs to. */
  run: number;
}

export interface PartialValue {
  mode?: string;
  segment?: number;
  delta?: string;
  snapshot?: unknown;
}

export class Timeline {
  items: Item[] = [];
  run = 0;
  private next = 1;
  private open = new Map<string, Item>(); // agent/name/segment -> the partial item

  startRun(): void {
    this.run += 1;
    this.open.clear();
  }

  /** Fold one stream event in; returns false for the events that are not intents. */
  add(event: string, data: unknown): boolean {
    if (event === "session") return false;
    if (event === "partial") {
      const partial = data as { name: string; value: PartialValue; agent: string };
      this.partial(partial.name, partial.agent, partial.value ?? {});
      return true;
    }
    const agent = (data as { agent?: unknown } | null)?.agent;
    this.final(event, typeof agent === "string" ? agent : "", data);
    return true;
  }

  private partial(name: string, agent: string, value: PartialValue): void {
    const id = `${agent}/${name}/${value.segment ?? 0}`;
    let item = this.open.get(id);
    if (item === undefined) {
      item = this.item(name, agent, null, true);
      this.open.set(id, item);
    }
    if (value.mode === "text") item.text += value.delta ?? "";
    else item.value = value.snapshot;
  }

  private final(name: string, agent: string, value: unknown): void {
    // The final intent takes the place of the oldest open partial of the same intent.
    for (const [id, item] of this.open) {
      if (item.name === name && (agent === "" || item.agent === agent)) {
        this.open.delete(id);
        Object.assign(item, { value, partial: false });
        return;
      }
    }
    this.item(name, agent, value, false);
  }

  private item(name: string, agent: string, value: unknown, partial: boolean): Item {
    const item = { key: this.next++, name, agent, value, partial, text: "", run: this.run };
    this.items.push(item);
    return item;
  }

  /** The timeline of a stored session: the final intents of each of its turns. */
  static of(session: Session): Timeline {
    const timeline = new Timeline();
    for (const turn of session.turns) {
      timeline.startRun();
      for (const intent of turn.intents) timeline.final(intent.name, intent.agent ?? "", intent.value);
    }
    return timeline;
  }
}

/** What the console shows of one run: its turn, tokens, model calls and time. */
export interface RunStats {
  turn: string;
  input: string;
  status: string;
  modelCalls: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  ms: number | null;
  /** A resume of the turn (after approvals): its numbers are its own, not the turn's. */
  resumed: boolean;
}

export function runStats(turn: Turn, ms: number | null): RunStats {
  const sum = (key: "input_tokens" | "output_tokens" | "total_tokens") =>
    turn.model_calls.reduce((n: number, call: ModelCall) => n + (call.usage?.[key] ?? 0), 0);
  return {
    turn: turn.id,
    input: turn.input.text,
    status: turn.status,
    modelCalls: turn.model_calls.length,
    inputTokens: sum("input_tokens"),
    outputTokens: sum("output_tokens"),
    totalTokens: sum("total_tokens"),
    ms,
    resumed: false,
  };
}

type Counted = "modelCalls" | "inputTokens" | "outputTokens" | "totalTokens";

/** `runs` with the run that just ended `turn` added: a resume of a turn already listed
 * counts only what it added to the turn's model calls and tokens. */
export function addRun(runs: RunStats[], turn: Turn, ms: number | null): RunStats[] {
  const total = runStats(turn, ms);
  const earlier = runs.filter((r) => r.turn === turn.id);
  const own = (key: Counted) => total[key] - earlier.reduce((n, r) => n + r[key], 0);
  return [...runs, {
    ...total,
    modelCalls: own("modelCalls"),
    inputTokens: own("inputTokens"),
    outputTokens: own("outputTokens"),
    totalTokens: own("totalTokens"),
    resumed: earlier.length > 0,
  }];
}

/** The answer of a turn as chat shows it: its text, else its structured output as JSON. */
export function answerOf(turn: Turn): string {
  const texts = turn.intents.filter((i) => i.name === "response_text");
  if (texts.length > 0) return texts.map((i) => String((i.value as { text?: unknown }).text ?? "")).join("\n");
  if (turn.output !== null && turn.output !== undefined) return JSON.stringify(turn.output, null, 2);
  const error = turn.intents.find((i) => i.name === "error");
  if (error !== undefined) return `error: ${(error.value as { message?: string }).message ?? ""}`;
  return turn.status === "awaiting_approval" ? "(waiting for approval)" : "";
}
