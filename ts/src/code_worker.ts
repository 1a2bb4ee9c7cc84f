// A sandbox worker of code mode (src/code_mode.ts): a worker thread that runs one step of
// model-written code at a time in Monty (@pydantic/monty) and answers with what happened. A
// step starts the code or resumes it from a suspension's bytes (Monty's snapshot dump), so no
// execution's state stays here between steps: any worker of the pool can take its next step,
// and the event loop of the application never runs the code itself.

import { parentPort } from "node:worker_threads";
import { Monty, MontyComplete, MontyError, MontyNameLookup, MontyRuntimeError, MontySnapshot, MontyTypingError, type ResourceLimits } from "@pydantic/monty";

/** What the host asks of a worker. */
export type StepRequest =
  | { id: number; op: "start"; code: string; prefix: string; limits: ResourceLimits; room: number }
  | { id: number; op: "resume"; kind: "call" | "lookup"; data: Uint8Array; reply: StepReply; room: number };

/** The answer to a suspension: a call's value or exception, or a name's function (or none). */
export type StepReply = { returnValue: unknown } | { exception: { type: string; message: string } } | { function: string | null };

/** A failure as plain data (Monty's error objects do not cross threads). */
export interface StepFailure {
  kind: "typing" | "runtime" | "syntax" | "other";
  /** The concise diagnostics of a type check; else `ExceptionType: message`. */
  text: string;
  /** The traceback's lines, outermost first. */
  lines: number[];
}

export type Progress =
  | { type: "complete"; output: unknown }
  | { type: "call"; name: string; args: unknown[]; kwargs: Record<string, unknown>; data: Uint8Array }
  | { type: "lookup"; name: string; data: Uint8Array }
  | { type: "error"; failure: StepFailure };

/** A step's result: what happened, what was printed meanwhile, how long the code ran. */
export interface StepResult {
  id: number;
  progress: Progress;
  /** The printed text kept (at most the request's `room` characters) and the total printed. */
  printed: string;
  printedTotal: number;
  seconds: number;
}

function named(name: string): () => void {
  const fn = (): void => undefined;
  Object.defineProperty(fn, "name", { value: name });
  return fn;
}

function failure(error: unknown): StepFailure {
  if (error instanceof MontyTypingError) return { kind: "typing", text: error.displayDiagnostics("concise"), lines: [] };
  if (error instanceof MontyRuntimeError) return { kind: "runtime", text: error.display("type-msg"), lines: error.traceback().map((f) => f.line) };
  if (error instanceof MontyError) return { kind: "syntax", text: error.display("type-msg"), lines: [] };
  return { kind: "other", text: error instanceof Error ? error.message : String(error), lines: [] };
}

function described(progress: MontySnapshot | MontyNameLookup | MontyComplete): Progress {
  if (progress instanceof MontyComplete) return { type: "complete", output: progress.output };
  // Copies with buffers of their own, to be transferred.
  if (progress instanceof MontyNameLookup) return { type: "lookup", name: progress.variableName, data: new Uint8Array(progress.dump()) };
  return { type: "call", name: progress.functionName, args: progress.args, kwargs: progress.kwargs, data: new Uint8Array(progress.dump()) };
}

function step(request: StepRequest): StepResult {
  let printed = "";
  let total = 0;
  const printCallback = (_stream: string, text: string): undefined => {
    for (const ch of text) {
      if (total < request.room) printed += ch;
      total++;
    }
    return undefined;
  };
  const started = performance.now();
  let progress: Progress;
  try {
    if (request.op === "start") {
      const program = new Monty(request.code, { scriptName: "code.py", typeCheck: true, typeCheckPrefixCode: request.prefix });
      progress = described(program.start({ limits: request.limits, printCallback }));
    } else {
      const data = Buffer.from(request.data.buffer, request.data.byteOffset, request.data.byteLength);
      const reply = request.reply;
      if (request.kind === "lookup") {
        const lookup = MontyNameLookup.load(data, { printCallback });
        const name = "function" in reply ? reply.function : null;
        progress = described(name === null ? lookup.resume() : lookup.resume({ value: named(name) }));
      } else {
        const snapshot = MontySnapshot.load(data, { printCallback });
        progress = described(snapshot.resume("function" in reply ? { exception: { type: "RuntimeError", message: "no value" } } : reply));
      }
    }
  } catch (error) {
    progress = { type: "error", failure: failure(error) };
  }
  return { id: request.id, progress, printed, printedTotal: total, seconds: (performance.now() - started) / 1000 };
}

parentPort?.on("message", (request: StepRequest) => {
  const result = step(request);
  const transfer = "data" in result.progress ? [result.progress.data.buffer as ArrayBuffer] : [];
  try {
    parentPort!.postMessage(result, transfer);
  } catch (error) {
    // An output that cannot cross threads (it cannot be cloned): said, never dropped.
    const text = `the code's value cannot be returned: ${error instanceof Error ? error.message : String(error)}`;
    parentPort!.postMessage({ ...result, progress: { type: "error", failure: { kind: "other", text, lines: [] } } });
  }
});
