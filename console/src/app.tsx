/** The dev console: the header (agent, config, compile state), the views, the live timeline. */

import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import * as api from "./api";
import { addRun, answerOf, runStats, Timeline, type RunStats } from "./timeline";
import type { Project, Session, SessionSummary, TestRun, TurnRecord } from "./types";
import { ApprovalsView, type Decision } from "./views/approvals";
import { ContextForm, contextDefaults, type Values } from "./views/context";
import { RunsView } from "./views/runs";
import { SessionsView } from "./views/sessions";
import { TestsView } from "./views/tests";
import { TimelineView } from "./views/timeline";

export const VIEWS = ["chat", "approvals", "sessions", "runs", "tests"] as const;
export type View = (typeof VIEWS)[number];

interface Message {
  role: "user" | "agent";
  text: string;
}

const newId = () => `c-${Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("")}`;

/** The chat history of a stored session: each turn's input and answer. */
function messagesOf(session: Session): Message[] {
  return session.turns.flatMap((t) => [
    { role: "user" as const, text: t.input.text },
    { role: "agent" as const, text: answerOf(t) },
  ]);
}

export function App(props: { poll?: number }) {
  const [project, setProject] = useState<Project | null>(null);
  const [view, setView] = useState<View>("chat");
  const [agent, setAgent] = useState("");
  const [config, setConfig] = useState("default");
  const [persona, setPersona] = useState("");
  const [context, setContext] = useState<Values>({});
  const [conversation, setConversation] = useState(newId);
  const [messages, setMessages] = useState<Message[]>([]);
  const timeline = useRef(new Timeline());
  const [items, setItems] = useState(timeline.current.items);
  const [runs, setRuns] = useState<RunStats[]>([]);
  const [selected, setSelected] = useState<number | null>(null);
  const [record, setRecord] = useState<TurnRecord | null>(null);
  const [sessions, setSessions] = useState<SessionSummary[]>([]);
  const [tests, setTests] = useState<TestRun | null>(null);
  const [testing, setTesting] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");
  const [input, setInput] = useState("");

  const refreshSessions = useCallback(async () => setSessions(await api.getSessions()), []);

  useEffect(() => {
    let version = -1;
    const load = async () => {
      try {
        const next = await api.getProject();
        if (next.version !== version) {
          version = next.version;
          setProject(next);
          setAgent((current) => (next.agents.some((a) => a.name === current) ? current : (next.agents[0]?.name ?? "")));
        }
      } catch {
        /* the server restarts: try again at the next tick */
      }
    };
    void load();
    void refreshSessions();
    const timer = setInterval(load, props.poll ?? 1500);
    return () => clearInterval(timer);
  }, []);

  useEffect(() => {
    const keys = (e: KeyboardEvent) => {
      const index = Number(e.key) - 1;
      if (e.altKey && index >= 0 && index < VIEWS.length) {
        e.preventDefault();
        setView(VIEWS[index]);
      }
    };
    window.addEventListener("keydown", keys);
    return () => window.removeEventListener("keydown", keys);
  }, []);

  useEffect(() => {
    if (view === "approvals" || view === "sessions") void refreshSessions();
  }, [view]);

  const info = project?.agents.find((a) => a.name === agent);
  const infoName = info?.name;
  useEffect(() => setContext(info === undefined ? {} : contextDefaults(info.context)), [infoName]);

  /** Fold a stream into the timeline; at its end, the run's stats and the sessions list. */
  const consume = async (go: (onEvent: (event: string, data: unknown) => void) => Promise<Session | null>) => {
    setBusy(true);
    setError("");
    timeline.current.startRun();
    const started = performance.now();
    try {
      const session = await go((event, data) => {
        if (timeline.current.add(event, data)) setItems([...timeline.current.items]);
      });
      if (session !== null && session.turns.length > 0) {
        const turn = session.turns[session.turns.length - 1];
        const ms = performance.now() - started;
        setRuns((old) => addRun(old, turn, ms));
        setMessages(messagesOf(session));
      }
      await refreshSessions();
    } catch (exc) {
      setError(String((exc as Error).message ?? exc));
    } finally {
      setBusy(false);
    }
  };

  const send = async (e: Event) => {
    e.preventDefault();
    const text = input.trim();
    if (text === "" || busy || info === undefined) return;
    setInput("");
    setMessages((old) => [...old, { role: "user", text }]);
    await consume((onEvent) =>
      api.streamRun(info.name, { input: text, conversation_id: conversation, context, config, ...(persona ? { persona } : {}) }, onEvent));
  };

  const reset = (id: string, session: Session | null) => {
    setConversation(id);
    timeline.current = session === null ? new Timeline() : Timeline.of(session);
    setItems([...timeline.current.items]);
    setMessages(session === null ? [] : messagesOf(session));
    setRuns(session === null ? [] : session.turns.map((t) => runStats(t, null)));
    setSelected(null);
    setRecord(null);
  };

  const open = async (id: string) => {
    const session = await api.getSession(id);
    if (project?.agents.some((a) => a.name === session.agent)) setAgent(session.agent);
    reset(id, session);
    setView("chat");
  };

  const replay = async (id: string) => {
    const session = await api.getSession(id);
    reset(newId(), null);
    setAgent(session.agent);
    setView("chat");
    const fresh = newId();
    setConversation(fresh);
    for (const turn of session.turns) {
      setMessages((old) => [...old, { role: "user", text: turn.input.text }]);
      let paused = false;
      await consume(async (onEvent) => {
        const result = await api.streamRun(session.agent, { input: turn.input.text, conversation_id: fresh, context, config }, onEvent);
        paused = result?.status === "awaiting_approval";
        return result;
      });
      if (paused) break; // decide its approvals first
    }
  };

  const exportSession = async (id: string) => {
    const session = await api.getSession(id);
    const link = document.createElement("a");
    link.href = URL.createObjectURL(new Blob([JSON.stringify(session, null, 2)], { type: "application/json" }));
    link.download = `${id}.session.json`;
    link.click();
  };

  const decide = async (id: string, decisions: Record<string, Decision>) => {
    if (id !== conversation) reset(id, await api.getSession(id));
    setView("chat");
    await consume((onEvent) => api.streamApprovals(id, decisions, onEvent));
  };

  const select = async (index: number) => {
    setSelected(index);
    setRecord(await api.getTurn(runs[index].turn));
  };

  const runAll = async (pattern: string) => {
    setTesting(true);
    try {
      setTests(await api.runTests(pattern));
    } finally {
      setTesting(false);
    }
  };

  const pending = sessions.reduce((n, s) => n + s.pending_approvals.length, 0);

  return (
    <div class="console">
      <header>
        <h1>auwgent dev</h1>
        <span class="pick">
          <label for="pick-agent">agent</label>
          <select id="pick-agent" value={agent} onChange={(e) => { setAgent(e.currentTarget.value); setConfig("default"); setPersona(""); reset(newId(), null); }}>
            {project?.agents.map((a) => <option key={a.name}>{a.name}</option>)}
          </select>
        </span>
        <span class="pick">
          <label for="pick-config">config</label>
          <select id="pick-config" value={config} onChange={(e) => setConfig(e.currentTarget.value)}>
            {info?.configs.map((c) => <option key={c}>{c}</option>)}
          </select>
        </span>
        {info !== undefined && info.personas.length > 0 ? (
          <span class="pick">
            <label for="pick-persona">persona</label>
            <select id="pick-persona" value={persona} onChange={(e) => setPersona(e.currentTarget.value)}>
              <option value="">(the config's)</option>
              {info.personas.map((p) => <option key={p}>{p}</option>)}
            </select>
          </span>
        ) : null}
        {info ? <span class={`mode ${info.mode}`} title={info.mode_reason}>model: {info.mode}</span> : null}
        <button type="button" onClick={() => reset(newId(), null)}>New conversation</button>
        <span class="muted conv">conversation <code>{conversation}</code></span>
      </header>
      {project !== null && project.problems.length > 0 ? (
        <pre class="problems" role="alert" aria-label="compile diagnostics">{project.problems.join("\n")}</pre>
      ) : null}
      <nav aria-label="views">
        {VIEWS.map((v, i) => (
          <button type="button" key={v} aria-current={view === v ? "page" : undefined} onClick={() => setView(v)}
            title={`Alt+${i + 1}`}>
            {v}{v === "approvals" && pending > 0 ? <span class="badge count">{pending}</span> : null}
          </button>
        ))}
      </nav>
      <main>
        <section class="view" aria-label={view}>
          {view === "chat" ? (
            <div class="chat">
              {info ? <ContextForm fields={info.context} values={context} onChange={setContext} /> : null}
              <ol class="messages" aria-label="messages">
                {messages.map((m, i) => <li key={i} class={m.role}><pre>{m.text}</pre></li>)}
              </ol>
              {error ? <p class="problems" role="alert">{error}</p> : null}
              <form class="row" onSubmit={send}>
                <textarea aria-label="message" rows={2} value={input} placeholder="Message (Enter sends, Shift+Enter: new line)"
                  onInput={(e) => setInput(e.currentTarget.value)}
                  onKeyDown={(e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); void send(e); } }} />
                <button type="submit" class="primary" disabled={busy || info === undefined}>{busy ? "Running…" : "Send"}</button>
              </form>
            </div>
          ) : view === "approvals" ? (
            <ApprovalsView sessions={sessions} onDecide={decide} />
          ) : view === "sessions" ? (
            <SessionsView sessions={sessions} current={conversation} onOpen={open} onReplay={replay} onExport={exportSession} />
          ) : view === "runs" ? (
            <RunsView runs={runs} selected={selected} record={record} tracing={project?.tracing ?? false} onSelect={select} />
          ) : (
            <TestsView result={tests} running={testing} onRun={runAll} />
          )}
        </section>
        <aside aria-label="timeline">
          <h2>Timeline</h2>
          <TimelineView items={items} />
        </aside>
      </main>
    </div>
  );
}
