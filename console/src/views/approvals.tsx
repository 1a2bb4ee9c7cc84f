/** The approvals inbox: every pending request of every conversation, to approve, deny or
 * defer. A conversation resumes once each of its pending requests has a decision (serve
 * takes them together); a deferred request stays pending in its session. */

import { useState } from "preact/hooks";
import type { ApprovalRequest, SessionSummary } from "../types";

export type Decision = { approved: boolean; reason?: string };

export function ApprovalsView(props: {
  sessions: SessionSummary[];
  onDecide: (conversation: string, decisions: Record<string, Decision>) => void;
}) {
  const waiting = props.sessions.filter((s) => s.pending_approvals.length > 0);
  if (waiting.length === 0) return <p class="muted">No call is waiting for approval.</p>;
  return (
    <div class="approvals">
      {waiting.map((s) => <Conversation key={s.id} session={s} onDecide={props.onDecide} />)}
    </div>
  );
}

function Conversation(props: { session: SessionSummary; onDecide: (c: string, d: Record<string, Decision>) => void }) {
  const { session } = props;
  const [decided, setDecided] = useState<Record<string, Decision | "defer">>({});
  const decide = (request: ApprovalRequest, decision: Decision | "defer") => {
    const next = { ...decided, [request.id]: decision };
    setDecided(next);
    const all = session.pending_approvals.every((r) => next[r.id] !== undefined && next[r.id] !== "defer");
    if (all) props.onDecide(session.id, next as Record<string, Decision>);
  };
  return (
    <section class="card" aria-label={`conversation ${session.id}`}>
      <h3>
        {session.agent} · <code>{session.id}</code>
      </h3>
      <p class="muted">asked in the turn: “{session.first_input}” ({session.turns} turn{session.turns === 1 ? "" : "s"})</p>
      {session.pending_approvals.map((request) => (
        <Request key={request.id} request={request} decided={decided[request.id]} decide={(d) => decide(request, d)} />
      ))}
    </section>
  );
}

function Request(props: { request: ApprovalRequest; decided: Decision | "defer" | undefined; decide: (d: Decision | "defer") => void }) {
  const { request, decided } = props;
  const [reason, setReason] = useState("");
  const state = decided === undefined ? "pending" : decided === "defer" ? "deferred" : decided.approved ? "approved" : "denied";
  return (
    <div class={`request ${state}`} data-request={request.id}>
      <div>
        <strong>{request.kind} {request.name}</strong> <span class="muted">by {request.agent}</span>{" "}
        <span class="badge">{state}</span>
      </div>
      <pre class="args">{JSON.stringify(request.args, null, 2)}</pre>
      <div class="actions">
        <button type="button" class="primary" onClick={() => props.decide({ approved: true })}>Approve</button>
        <input aria-label="reason for a denial" placeholder="reason (shown to the model)" value={reason}
          onInput={(e) => setReason(e.currentTarget.value)} />
        <button type="button" onClick={() => props.decide(reason ? { approved: false, reason } : { approved: false })}>
          Deny
        </button>
        <button type="button" onClick={() => props.decide("defer")}>Defer</button>
      </div>
    </div>
  );
}
