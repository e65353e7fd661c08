import { type ContentBlock, createMessage, type Message, UserError, withMark } from "@almanac/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { WorkingMemory } from "./working-memory.js";

const text = fc.string({ unit: "binary", maxLength: 40 });
const nonEmpty = fc.string({ unit: "binary", minLength: 1, maxLength: 20 });

const contentBlock: fc.Arbitrary<ContentBlock> = fc.oneof(
  fc.record({ type: fc.constant("text" as const), text }, { noNullPrototype: true }),
  fc.record(
    {
      type: fc.constant("image" as const),
      url: fc.oneof(fc.webUrl(), fc.constant("data:image/png;base64,iVBORw0KGgo=")),
      detail: fc.constantFrom("auto" as const, "low" as const, "high" as const),
    },
    { requiredKeys: ["type", "url"], noNullPrototype: true },
  ),
  fc.record(
    { type: fc.constant("tool_call" as const), id: nonEmpty, name: nonEmpty, arguments: text },
    { noNullPrototype: true },
  ),
  fc.record(
    { type: fc.constant("tool_result" as const), callId: nonEmpty, content: text, isError: fc.boolean() },
    { requiredKeys: ["type", "callId", "content"], noNullPrototype: true },
  ),
  fc.record({ type: fc.constant("reasoning" as const), text }, { noNullPrototype: true }),
);

const message: fc.Arbitrary<Message> = fc
  .record(
    {
      id: nonEmpty,
      role: fc.constantFrom("system" as const, "user" as const, "assistant" as const, "tool" as const),
      name: text,
      timestamp: fc.integer({ min: 0, max: 2 ** 45 }),
      content: fc.array(contentBlock, { maxLength: 4 }),
      marks: fc.array(fc.oneof(fc.constantFrom("compacted", "compressed", "pinned"), text), { maxLength: 3 }),
    },
    { requiredKeys: ["id", "role", "timestamp", "content", "marks"], noNullPrototype: true },
  )
  .map((fields) => createMessage(fields));

const counterValue = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }).filter((value) => !Object.is(value, -0)),
);

const memoryInit = fc.record(
  {
    messages: fc.array(message, { maxLength: 8 }),
    summary: fc.record({
      text,
      updatedAt: fc.integer({ min: 0, max: 2 ** 45 }),
      compactions: fc.nat(),
    }),
    counters: fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9._-]{0,15}$/), counterValue, {
      maxKeys: 4,
      noNullPrototype: true,
    }),
  },
  { requiredKeys: ["messages", "counters"], noNullPrototype: true },
);

describe("WorkingMemory", () => {
  it("survives a JSON round trip unchanged for any messages, summary and counters", () => {
    fc.assert(
      fc.property(memoryInit, (init) => {
        const memory = new WorkingMemory(init);
        const snapshot = memory.toJSON();
        const restored = WorkingMemory.fromJSON(JSON.parse(JSON.stringify(snapshot)));
        expect(restored.toJSON()).toStrictEqual(snapshot);
      }),
      { numRuns: 200 },
    );
  });

  it("keeps marks, names, reasoning, images, tool blocks and unicode through a round trip", () => {
    const memory = new WorkingMemory({
      messages: [
        withMark(
          createMessage({ role: "user", name: "小明", content: "你好 👋🏽 مرحبا", timestamp: 1 }),
          "compacted",
        ),
        createMessage({
          role: "assistant",
          timestamp: 2,
          content: [
            { type: "reasoning", text: "think…" },
            { type: "tool_call", id: "call_1", name: "read_file", arguments: '{"path":"a.md"}' },
          ],
        }),
        createMessage({
          role: "tool",
          timestamp: 3,
          content: [{ type: "tool_result", callId: "call_1", content: "boom", isError: true }],
        }),
        createMessage({
          role: "user",
          timestamp: 4,
          content: [{ type: "image", url: "https://example.com/cat.png", detail: "low" }],
        }),
      ],
      summary: { text: "earlier: 🌍", updatedAt: 5, compactions: 2 },
      counters: { "compaction.strikes": 1 },
    });
    const restored = WorkingMemory.fromJSON(JSON.parse(JSON.stringify(memory)));
    expect(restored.toJSON()).toStrictEqual(memory.toJSON());
    expect(restored.messages[0]?.marks).toEqual(["compacted"]);
    expect(restored.summary).toEqual({ text: "earlier: 🌍", updatedAt: 5, compactions: 2 });
  });

  it("rejects a snapshot with a bad message, naming where the problem is", () => {
    const snapshot = {
      version: 1,
      messages: [{ id: "m1", role: "robot", timestamp: 1, content: [], marks: [] }],
      counters: {},
    };
    let thrown: unknown;
    try {
      WorkingMemory.fromJSON(snapshot);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UserError);
    expect(thrown).toMatchObject({ code: "memory.invalid" });
    expect((thrown as Error).message).toContain("messages[0].role");
  });

  it("rejects snapshots of an unknown version and values that are not snapshots at all", () => {
    expect(() => WorkingMemory.fromJSON({ version: 2, messages: [], counters: {} })).toThrow(/version/);
    expect(() => WorkingMemory.fromJSON("not a snapshot")).toThrow(UserError);
    expect(() => WorkingMemory.fromJSON({ version: 1, messages: [], counters: { strikes: "3" } })).toThrow(
      /counters\.strikes/,
    );
  });

  it("leaves compacted messages out of the active messages but keeps them in messages", () => {
    const old = withMark(createMessage({ role: "user", content: "old" }), "compacted");
    const recent = createMessage({ role: "user", content: "recent" });
    const memory = new WorkingMemory({ messages: [old, recent] });
    expect(memory.activeMessages()).toEqual([recent]);
    expect(memory.messages).toEqual([old, recent]);
  });

  it("keeps the active messages right as messages are appended, compacted or not", () => {
    const old = withMark(createMessage({ role: "user", content: "old" }), "compacted");
    const recent = createMessage({ role: "user", content: "recent" });
    const memory = new WorkingMemory({ messages: [old, recent] });
    const first = memory.activeMessages();
    const reply = createMessage({ role: "assistant", content: "reply" });
    const moved = withMark(createMessage({ role: "user", content: "moved" }), "compacted");
    memory.append(reply, moved);
    expect(memory.activeMessages()).toEqual([recent, reply]);
    expect(first).toEqual([recent]);
    memory.append(moved);
    expect(memory.activeMessages()).toEqual([recent, reply]);
    memory.replaceMessages([old, recent]);
    expect(memory.activeMessages()).toEqual([recent]);
  });

  it("repairs tool pairs, looking again only at what was appended since the last check", () => {
    const call = (id: string) =>
      createMessage({ role: "assistant", content: [{ type: "tool_call", id, name: "t", arguments: "{}" }] });
    const result = (id: string) =>
      createMessage({ role: "tool", content: [{ type: "tool_result", callId: id, content: "ok" }] });
    const memory = new WorkingMemory({
      messages: [createMessage({ role: "user", content: "go" }), call("a")],
    });
    expect(memory.repairToolPairs()).toBe(true); // the call got its missing result
    expect(memory.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    const intact = memory.messages;
    expect(memory.repairToolPairs()).toBe(false);
    expect(memory.messages).toBe(intact);
    memory.append(call("b"), result("b"));
    expect(memory.repairToolPairs()).toBe(false);
    memory.append(result("zzz")); // answers nothing: dropped
    expect(memory.repairToolPairs()).toBe(true);
    expect(memory.messages).toHaveLength(5);
    memory.append(call("c"));
    expect(memory.repairToolPairs()).toBe(true);
    expect(memory.messages).toHaveLength(7);
    // Replaced messages are checked again from the start.
    memory.replaceMessages([result("orphan"), ...memory.messages.slice(1)]);
    expect(memory.repairToolPairs()).toBe(true);
    expect(memory.messages).toHaveLength(6);
  });

  it("never changes a messages array handed out earlier", () => {
    const memory = new WorkingMemory();
    const before = memory.messages;
    memory.append(createMessage({ role: "user", content: "hi" }));
    expect(before).toHaveLength(0);
    expect(memory.messages).toHaveLength(1);
    memory.replaceMessages([]);
    expect(memory.messages).toHaveLength(0);
  });

  it("reads an unset counter as zero and keeps set counters in the snapshot", () => {
    const memory = new WorkingMemory();
    expect(memory.counter("compaction.strikes")).toBe(0);
    memory.setCounter("compaction.strikes", 2);
    expect(memory.counter("compaction.strikes")).toBe(2);
    expect(memory.toJSON().counters).toEqual({ "compaction.strikes": 2 });
  });

  it("omits the summary from the snapshot once it is removed", () => {
    const memory = new WorkingMemory({ summary: { text: "s", updatedAt: 1, compactions: 1 } });
    memory.setSummary(undefined);
    expect("summary" in memory.toJSON()).toBe(false);
  });
});
