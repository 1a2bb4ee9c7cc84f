/** The sessions of this dev server: open one (its history and intents), replay its inputs
 * in a new conversation, or export it as JSON. */

import type { SessionSummary } from "../types";

export function SessionsView(props: {
  sessions: SessionSummary[];
  current: string;
  onOpen: (id: string) => void;
  onReplay: (id: string) => void;
  onExport: (id: string) => void;
}) {
  if (props.sessions.length === 0) return <p class="muted">No session yet: each conversation of the console is kept here while `auwgent dev` runs.</p>;
  return (
    <table class="sessions">
      <thead>
        <tr><th>conversation</th><th>agent</th><th>turns</th><th>status</th><th>first input</th><th /></tr>
      </thead>
      <tbody>
        {props.sessions.map((s) => (
          <tr key={s.id} class={s.id === props.current ? "current" : ""} data-session={s.id}>
            <td><code>{s.id}</code></td>
            <td>{s.agent}</td>
            <td>{s.turns}</td>
            <td>{s.status ?? ""}{s.pending ? ` (${s.pending} pending)` : ""}</td>
            <td class="clip">{s.first_input}</td>
            <td class="actions">
              <button type="button" onClick={() => props.onOpen(s.id)}>Open</button>
              <button type="button" onClick={() => props.onReplay(s.id)}>Replay</button>
              <button type="button" onClick={() => props.onExport(s.id)}>Export</button>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
