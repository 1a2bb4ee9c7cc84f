// The real UI clients against a running `auwgent serve` (tests/ui_clients/test_ui_clients.py).
//
//   node client.mjs ai-sdk URL TOKEN CHAT_ID TEXT [approve | deny]
//   node client.mjs ag-ui  URL TOKEN THREAD_ID TEXT [approve | deny]
//
// ai-sdk: a Chat (the package's AbstractChat over a plain in-memory state) with the package's
// DefaultChatTransport sends TEXT; every chunk the transport reads is recorded, and the chunks
// are read again by readUIMessageStream. With `approve` (`deny`), a waiting approval is
// granted (denied) with addToolApprovalResponse and the Chat sends the answer itself
// (sendAutomaticallyWhen). ag-ui: an HttpAgent runs with TEXT as a user message; every event
// is recorded. With `approve`, an interrupt is resolved with {approved: true} in a second
// run's `resume`; with `deny`, it is cancelled.
// Prints one JSON object: what was read, in order, and what the client made of it.
import {
  AbstractChat,
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  readUIMessageStream,
} from "ai";
import { HttpAgent } from "@ag-ui/client";

const [mode, url, token, id, text, decide] = process.argv.slice(2);
const headers = { authorization: `Bearer ${token}` };

class State {
  constructor() {
    this.status = "ready";
    this.error = undefined;
    this.messages = [];
  }
  pushMessage(message) {
    this.messages = [...this.messages, message];
  }
  popMessage() {
    this.messages = this.messages.slice(0, -1);
  }
  replaceMessage(index, message) {
    this.messages = this.messages.map((m, i) => (i === index ? message : m));
  }
  snapshot(thing) {
    return structuredClone(thing);
  }
}

class Chat extends AbstractChat {
  constructor(options) {
    super({ ...options, state: new State() });
  }
}

/** A transport that records the chunks of each response as the package's reader gives them. */
class RecordingTransport extends DefaultChatTransport {
  constructor(options) {
    super(options);
    this.responses = [];
  }
  processResponseStream(stream) {
    const chunks = [];
    this.responses.push(chunks);
    const record = new TransformStream({
      transform(chunk, controller) {
        chunks.push(structuredClone(chunk)); // as read: the chat updates parts in place later
        controller.enqueue(chunk);
      },
    });
    return super.processResponseStream(stream).pipeThrough(record);
  }
}

async function reread(chunks, message) {
  // The same chunks through readUIMessageStream: the message it builds, the last one.
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(structuredClone(chunk)); // it keeps them
      controller.close();
    },
  });
  let last;
  for await (const built of readUIMessageStream({ stream, message })) last = built;
  return last;
}

async function aiSdk() {
  const transport = new RecordingTransport({ api: `${url}?ui=ai-sdk`, headers });
  const errors = [];
  const chat = new Chat({
    id,
    transport,
    onError: (error) => errors.push(String(error?.message ?? error)),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  await chat.sendMessage({ text });
  const requests = [];
  if (decide) {
    const waiting = chat.messages.at(-1).parts.find((p) => p.state === "approval-requested");
    requests.push(waiting?.approval?.id ?? null);
    const approved = decide === "approve";
    if (waiting) await chat.addToolApprovalResponse({ id: waiting.approval.id, approved });
    // The chat resubmits on its own; wait until it has and the answer is in.
    for (let i = 0; i < 1200 && (transport.responses.length < 2 || chat.status !== "ready"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const reread_ = [];
  let base;
  for (const chunks of transport.responses) {
    const built = await reread(chunks, base);
    reread_.push(built);
    base = built;
  }
  return { responses: transport.responses, messages: chat.messages, reread: reread_, errors,
           status: chat.status, approvals: requests };
}

async function agUi() {
  const agent = new HttpAgent({ url: `${url}?ui=ag-ui`, headers, threadId: id });
  const runs = [];
  const record = () => {
    const events = [];
    runs.push(events);
    return { onEvent: ({ event }) => void events.push(event) };
  };
  agent.addMessage({ id: "u1", role: "user", content: text });
  const errors = [];
  const run = async (parameters) => {
    try {
      await agent.runAgent(parameters, record());
    } catch (error) {
      errors.push(String(error?.message ?? error));
    }
  };
  await run();
  const finished = runs[0].find((e) => e.type === "RUN_FINISHED");
  const interrupts = finished?.outcome?.type === "interrupt" ? finished.outcome.interrupts : [];
  if (decide && interrupts.length) {
    const resume = interrupts.map((i) =>
      decide === "approve"
        ? { interruptId: i.id, status: "resolved", payload: { approved: true } }
        : { interruptId: i.id, status: "cancelled" },
    );
    await run({ resume });
  }
  return { runs, messages: agent.messages, state: agent.state, errors };
}

const result = mode === "ai-sdk" ? await aiSdk() : await agUi();
process.stdout.write(JSON.stringify(result));
