/** The console's calls: the dev server's `/dev/api/...` and `auwgent serve`'s own API. */

import { SseReader } from "./sse";
import type { Project, Session, SessionSummary, TestRun, TurnRecord } from "./types";

export class ApiError extends Error {}

async function json<T>(response: Response): Promise<T> {
  const body = (await response.json()) as T & { error?: { message: string } };
  if (!response.ok) throw new ApiError(body.error?.message ?? `HTTP ${response.status}`);
  return body;
}

const post = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

export const getProject = async (): Promise<Project> => json(await fetch("/dev/api/project"));

export const getSessions = async (): Promise<SessionSummary[]> =>
  (await json<{ sessions: SessionSummary[] }>(await fetch("/dev/api/sessions"))).sessions;

export const getSession = async (id: string): Promise<Session> =>
  json(await fetch(`/v1/conversations/${encodeURIComponent(id)}`));

export const getTurn = async (turn: string): Promise<TurnRecord> =>
  json(await fetch(`/dev/api/turns/${encodeURIComponent(turn)}`));

export const runTests = async (pattern: string): Promise<TestRun> =>
  json(await fetch("/dev/api/tests", post(pattern ? { pattern } : {})));

export interface RunBody {
  input: string;
  conversation_id: string;
  context?: Record<string, unknown>;
  config?: string;
  persona?: string;
}

/** A run's events, as they come: `onEvent` for each; resolves with the final session (the
 * stream's `session` event is its record without the content, so the whole one is read back). */
export async function streamRun(
  agent: string,
  body: RunBody,
  onEvent: (event: string, data: unknown) => void,
): Promise<Session | null> {
  const ended = await stream(await fetch(`/v1/agents/${encodeURIComponent(agent)}/runs`, post(body)), onEvent);
  return ended === null ? null : getSession(body.conversation_id);
}

/** Decide a conversation's pending approvals and stream the resumed run. */
export async function streamApprovals(
  conversation: string,
  decisions: Record<string, boolean | { approved: boolean; reason?: string }>,
  onEvent: (event: string, data: unknown) => void,
): Promise<Session | null> {
  const url = `/v1/conversations/${encodeURIComponent(conversation)}/approvals`;
  const ended = await stream(await fetch(url, post({ decisions })), onEvent);
  return ended === null ? null : getSession(conversation);
}

async function stream(
  response: Response,
  onEvent: (event: string, data: unknown) => void,
): Promise<Session | null> {
  if (!response.ok || response.body === null) await json(response);
  const reader = new SseReader();
  const decoder = new TextDecoder();
  const chunks = (response.body as ReadableStream<Uint8Array>).getReader();
  let session: Session | null = null;
  for (;;) {
    const { done, value } = await chunks.read();
    const text = done ? decoder.decode() : decoder.decode(value, { stream: true });
    for (const event of reader.feed(text)) {
      if (event.event === "session") session = event.data as Session;
      onEvent(event.event, event.data);
    }
    if (done) return session;
  }
}
