// The "approvals" key of an engine scenario (conformance/gen_approvals.py), as the Python
// runner reads it (src/auwgent/testing/conformance_approvals.py): the approver's scripted
// answers, the resumes after the inputs, and the random ids written as <id>.
import { AuwgentError } from "../dist/index.js";

class ApproverFailure extends Error {
  name = "ApproverFailure";
}

/** An async approver giving `answers` in order (null once they run out), noting every
 * request it is shown in `asked`. */
export function approver(answers, asked) {
  const left = [...answers];
  return async function decide(request) {
    asked.push(structuredClone(request));
    const answer = left.length ? left.shift() : null;
    if (answer && typeof answer === "object" && "raise" in answer) throw new ApproverFailure(answer.raise);
    if (answer && typeof answer === "object" && answer.hang) await new Promise(() => {}); // never answers
    return structuredClone(answer);
  };
}

/** One agent.resume per entry: decisions for the pending requests in order, or `{raw}`;
 * stops at the first refusal (returned as `raised`). */
export async function resumeAll(agent, session, entries, edits = []) {
  // A stored pause tampered with: each [path, value] is set before the first resume.
  for (const [path, value] of edits) {
    let at = session;
    const key = (step, on) => (typeof step === "number" && step < 0 ? on.length + step : step);
    for (const step of path.slice(0, -1)) at = at[key(step, at)];
    at[key(path.at(-1), at)] = structuredClone(value);
  }
  for (const entry of entries) {
    let decisions;
    if (!Array.isArray(entry)) decisions = structuredClone(entry.raw);
    else {
      const pending = session?.pending_approvals ?? [];
      const requests = Array.isArray(pending) ? pending.filter((p) => p && typeof p === "object" && !Array.isArray(p)) : [];
      decisions = Object.fromEntries(requests.slice(0, entry.length).map((p, i) => [p.id, entry[i]]));
    }
    try {
      session = await agent.resume(session, decisions);
    } catch (error) {
      if (!(error instanceof AuwgentError)) throw error;
      return [session, { error: error.name, message: error.message }];
    }
  }
  return [session, null];
}

/** `value` with the random ids and the decision times written as <id> / <time>. */
export function normalIds(value) {
  const text = JSON.stringify(value)
    .replace(/\b[0-9a-f]{32}\b/g, "<id>")
    .replace(/"decided_at":"[^"]*"/g, '"decided_at":"<time>"');
  return JSON.parse(text);
}
