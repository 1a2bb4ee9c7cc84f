// No-progress detection (loops.py): a model that keeps making the same calls is told so once,
// then the run stops. Steps are (agent, kind, name, args, outcome) as canonical JSON; tools
// marked @repeatable are exempt. Config: "loopDetection": { repeats } or false.

import { ConfigError } from "./errors.js";
import { isObject } from "./schema.js";

export const DEFAULT_REPEATS = 3;

export function parseLoopDetection(value: unknown): number | null {
  if (value === undefined || value === null || value === true) return DEFAULT_REPEATS;
  if (value === false) return null;
  if (!isObject(value)) throw new ConfigError(`loopDetection: expected an object or false, got ${typeof value}`);
  for (const key of Object.keys(value)) if (key !== "repeats") throw new ConfigError(`loopDetection.${key}: unknown key (valid keys: repeats)`);
  const repeats = value.repeats ?? DEFAULT_REPEATS;
  if (typeof repeats !== "number" || !Number.isInteger(repeats) || repeats < 2)
    throw new ConfigError(`loopDetection.repeats: expected a whole number of at least 2, got ${JSON.stringify(repeats)}`);
  return repeats;
}

/** json.dumps(value, sort_keys=True, separators=(",", ":")) */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  if (isObject(value))
    return "{" + Object.keys(value).sort().map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
  return value === undefined ? "null" : JSON.stringify(value);
}

export type Step = [kind: string, name: string, args: unknown, outcome: unknown];

export class LoopDetector {
  private counts = new Map<string, number>();
  private recent = new Map<string, string[][]>();
  private warned = false;
  constructor(private repeats: number) {}

  observe(agent: string, steps: Step[]): ["warn" | "stop", string] | null {
    let found: string | null = null;
    if (!this.recent.has(agent)) this.recent.set(agent, []);
    const history = this.recent.get(agent)!;
    for (const [kind, name, args, outcome] of steps) {
      const step = [agent, kind, name, canonical(args), canonical(outcome)];
      const key = JSON.stringify(step);
      const count = (this.counts.get(key) ?? 0) + 1;
      this.counts.set(key, count);
      history.push(step);
      history.splice(0, Math.max(0, history.length - 4));
      const same = (a: string[], b: string[]) => a.every((x, i) => x === b[i]);
      if (count >= this.repeats) found = `${name} was called ${count} times with the same arguments (${step[3]}) and got the same result each time`;
      else if (history.length === 4 && same(history[0]!, history[2]!) && !same(history[2]!, history[1]!) && same(history[1]!, history[3]!))
        found = `${history[0]![2]} ${history[0]![3]} and ${history[1]![2]} ${history[1]![3]} were called in turn, twice, with the same results each time`;
    }
    if (found === null) return null;
    if (!this.warned) {
      this.warned = true;
      return ["warn", found];
    }
    return ["stop", found];
  }

  static note(reason: string): string {
    return `You are repeating yourself: ${reason}. Calling it again will not give a different answer. Use the results you already have, try something else, or answer the user.`;
  }

  static failure(reason: string): string {
    return `no progress: ${reason}, after being told it was repeating itself; the run stops`;
  }
}
