// The error tree of the runtime, as in the Python runtime's auwgent.errors.

export class AuwgentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
/** A mistake in the runtime config (the message names the key path). */
export class ConfigError extends AuwgentError {}
/** A context value of the wrong type, or a required one missing. */
export class ContextError extends ConfigError {}
/** A run's input is not a string or a valid list of parts; the message names the part. */
export class InputError extends AuwgentError {}
/** A tool call failed: missing implementation, invalid arguments, or an exception. */
export class ToolError extends AuwgentError {}
/** A workflow failed while running; names the .agent file and line. */
export class WorkflowError extends AuwgentError {
  constructor(
    message: string,
    public file: string | null = null,
    public line: number | null = null,
  ) {
    super(file && line ? `${file}:${line}: ${message}` : message);
  }
}
/** A session paused for approvals was given new input (approvals run in the Python runtime). */
export class ApprovalError extends AuwgentError {}

/** A save was based on a stale revision: another run or process changed the stored session first. */
export class ConflictError extends AuwgentError {}
/** The IR asks for something this runtime does not have yet (see ts/README.md). */
export class UnsupportedError extends AuwgentError {}

/** How a refused control reads after the value (the Python runtime says the same). */
const CONTROLS = 'which is not a control (expected {"skip": true}, {"result": ...} or nothing)';
/** The longest rendering of a refused value in a message (characters). */
const SHOWN = 120;

/** `value` as compact JSON in a message (`a <type>` when it is not JSON), cut at 120 characters. */
export function shown(value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  if (text === undefined || (typeof value === "number" && !Number.isFinite(value))) text = `a ${typeof value}`;
  return text.length <= SHOWN ? text : text.slice(0, SHOWN - 3) + "...";
}

/** A guard (`onIntent` middleware or intent handler) returned, for a call intent, a value that
 * is neither a control nor nothing: the call is refused. */
export class NotAControl extends AuwgentError {
  constructor(
    public value: unknown,
    who = "a guard",
    what = "a call",
  ) {
    super(`${who} returned ${shown(value)} on ${what}, ${CONTROLS}; the call was not run`);
  }
  /** The same refusal, naming the guard and the call. */
  naming(who: string, what: string): NotAControl {
    return new NotAControl(this.value, who, what);
  }
}

const API_LABELS: Record<string, string> = { openai: "OpenAI", gemini: "Gemini", anthropic: "Anthropic" };

/** A model provider request failed (after retries, where the failure was retryable). */
export class ProviderError extends AuwgentError {
  providerMessage: string;
  constructor(
    public provider: string,
    message: string,
    public status: number | null = null,
    public retryable = false,
  ) {
    const where = `${API_LABELS[provider] ?? provider} API error` + (status !== null ? ` (${status})` : "");
    super(`${where}: ${message}`);
    this.providerMessage = message;
  }
}

/** A model and each of its `fallback` models failed before answering: `attempts` holds each
 * model tried (`provider:model`) with its error, in order, and the message lists them all;
 * `provider`, `status` and `retryable` are the last attempt's. */
export class FallbackError extends ProviderError {
  constructor(public attempts: [model: string, error: ProviderError][]) {
    const last = attempts[attempts.length - 1]![1];
    super(last.provider, last.providerMessage, last.status, last.retryable);
    this.message = `the model and its fallbacks all failed before answering: ${attempts.map(([model, error]) => `${model}: ${error.message}`).join("; ")}`;
  }
}
