import assert from "node:assert/strict";
import { test } from "node:test";
import { SseReader } from "../src/sse";

test("events split across chunks come out whole, once complete", () => {
  const reader = new SseReader();
  assert.deepEqual(reader.feed('event: tool_call\ndata: {"type": "look'), []);
  assert.deepEqual(reader.feed('up", "args": {}}\n'), []);
  assert.deepEqual(reader.feed("\nevent: session\r\ndata: {}\r\n\r\n"), [
    { event: "tool_call", data: { type: "lookup", args: {} } },
    { event: "session", data: {} },
  ]);
});

test("data lines join with newlines; comments and dataless events are skipped", () => {
  const reader = new SseReader();
  assert.deepEqual(reader.feed(": keep-alive\n\nevent: note\ndata: one\ndata: two\n\n"), [
    { event: "note", data: "one\ntwo" },
  ]);
});
