import {
  createMessage,
  type Message,
  messageText,
  type ToolResultBlock,
  toolResultsOf,
  withMark,
} from "@almanac/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FakeChatModel, step } from "../test/fake-chat-model.js";
import { toolPairingProblems } from "../test/tool-pairing.js";
import { createAgent } from "./agent.js";
import type { AgentEvent } from "./agent-events.js";
import { type BeforeModelCall, createHookRegistry } from "./hooks.js";
import { createToolkit, defineTool } from "./toolkit.js";
import { WorkingMemory } from "./working-memory.js";

function createClock(start = 1_000): () => number {
  let now = start;
  return () => {
    now += 1;
    return now;
  };
}

const weather = defineTool({
  name: "get_weather",
  description: "Weather for a city.",
  parameters: z.object({ city: z.string() }),
  execute: async ({ city }) => (city === "Oslo" ? "snow, -3°C" : "sun, 21°C"),
});

function userSays(text: string) {
  return createMessage({ role: "user", content: text, timestamp: 1 });
}

function toolResultsIn(messages: readonly Message[]): ToolResultBlock[] {
  return messages.flatMap((message) => toolResultsOf(message));
}

describe("createAgent", () => {
  it("runs tools over several steps and answers once the model stops calling them", async () => {
    const model = new FakeChatModel([
      step.toolCalls([{ id: "call_oslo", name: "get_weather", arguments: { city: "Oslo" } }]),
      step.toolCalls([{ id: "call_rome", name: "get_weather", arguments: { city: "Rome" } }], "Now Rome."),
      step.text("Oslo has snow; Rome is sunny."),
    ]);
    const memory = new WorkingMemory();
    const agent = createAgent({
      model,
      toolkit: createToolkit([weather]),
      systemPrompt: "You help.",
      clock: createClock(),
    });

    const result = await agent.run({ memory, input: userSays("Weather in Oslo and Rome?") });

    expect(result.stopReason).toBe("final");
    expect(result.iterations).toBe(3);
    expect(result.usage).toHaveLength(3);
    expect(messageText(result.reply)).toBe("Oslo has snow; Rome is sunny.");
    expect(memory.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "assistant",
      "tool",
      "assistant",
    ]);
    expect(memory.messages.at(-1)).toBe(result.reply);
    expect(toolPairingProblems(memory.messages)).toEqual([]);
    // Every added message is stamped by the injected clock, in order.
    const stamps = memory.messages.slice(1).map((message) => message.timestamp);
    expect(stamps).toEqual([...stamps].sort((a, b) => a - b));
    expect(stamps.every((stamp) => stamp > 1_000)).toBe(true);

    const third = model.requests[2]!;
    expect(third.tools?.map((tool) => tool.name)).toEqual(["get_weather"]);
    expect(third.messages[0]).toMatchObject({ role: "system" });
    expect(toolResultsIn(third.messages).map((block) => [block.callId, block.content])).toEqual([
      ["call_oslo", "snow, -3°C"],
      ["call_rome", "sun, 21°C"],
    ]);
  });

  it("runs parallel tool calls at the same time and appends the results in call order", async () => {
    const started = new Map<string, () => void>();
    const startedPromises = new Map<string, Promise<void>>();
    for (const name of ["a", "b"]) {
      startedPromises.set(name, new Promise<void>((resolve) => started.set(name, resolve)));
    }
    let bFinished!: () => void;
    const bDone = new Promise<void>((resolve) => {
      bFinished = resolve;
    });
    const rendezvous = defineTool({
      name: "rendezvous",
      description: "Waits for the other call to start.",
      parameters: z.object({ me: z.enum(["a", "b"]), other: z.enum(["a", "b"]) }),
      execute: async ({ me, other }) => {
        started.get(me)!();
        await startedPromises.get(other);
        // "a" finishes after "b", so completion order differs from call order.
        if (me === "a") await bDone;
        else bFinished();
        return `${me} met ${other}`;
      },
    });
    const model = new FakeChatModel([
      step.toolCalls([
        { id: "call_a", name: "rendezvous", arguments: { me: "a", other: "b" } },
        { id: "call_b", name: "rendezvous", arguments: { me: "b", other: "a" } },
      ]),
      step.text("Both met."),
    ]);
    const events: AgentEvent[] = [];
    const memory = new WorkingMemory();
    // Run one at a time, neither call could finish: the timeout turns that into an error result.
    const toolkit = createToolkit([rendezvous], { timeoutMs: 2_000 });
    await createAgent({ model, toolkit, systemPrompt: "" }).run({
      memory,
      input: userSays("go"),
      onEvent: (event) => events.push(event),
    });

    const results = toolResultsIn(memory.messages);
    expect(results).toEqual([
      { type: "tool_result", callId: "call_a", content: "a met b" },
      { type: "tool_result", callId: "call_b", content: "b met a" },
    ]);
    expect(memory.messages.filter((message) => message.role === "tool")).toHaveLength(2);
    const ends = events.flatMap((event) => (event.type === "tool-end" ? [event.call.id] : []));
    expect(ends).toEqual(["call_b", "call_a"]);
  });

  it("runs the steps before each model call in their listed order, and builds the request after them", async () => {
    const order: string[] = [];
    const seenIterations: number[] = [];
    const first = async ({ iteration }: { iteration: number }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(`persist ${iteration}`);
    };
    const second = ({ memory, iteration }: Parameters<BeforeModelCall>[0]) => {
      order.push(`compact ${iteration}`);
      seenIterations.push(iteration);
      if (iteration !== 2) return;
      // What compaction will do: mark old messages and put a summary in their place.
      const [first, ...rest] = memory.messages;
      memory.replaceMessages([withMark(first!, "compacted"), ...rest]);
      memory.setSummary({ text: "The user asked about Oslo.", updatedAt: 5, compactions: 1 });
    };
    const model = new FakeChatModel([
      step.toolCalls([{ name: "get_weather", arguments: { city: "Oslo" } }]),
      step.text("Snow."),
    ]);
    const memory = new WorkingMemory();
    await createAgent({
      model,
      toolkit: createToolkit([weather]),
      beforeModelCall: [first, second],
      systemPrompt: "You help.",
    }).run({ memory, input: userSays("Weather in Oslo?") });

    expect(order).toEqual(["persist 1", "compact 1", "persist 2", "compact 2"]);
    expect(seenIterations).toEqual([1, 2]);
    const [before, after] = model.requests;
    expect(before!.messages.map((message) => message.role)).toEqual(["system", "user"]);
    expect(after!.messages.map((message) => message.role)).toEqual(["system", "assistant", "tool"]);
    expect(messageText(after!.messages[0]!)).toContain("<conversation-summary>\nThe user asked about Oslo.");
    expect(memory.messages[0]!.marks).toEqual(["compacted"]);
  });

  it("answers a call a preActing hook skips without running the tool, and reports every result to postActing", async () => {
    let deletions = 0;
    const deleteAll = defineTool({
      name: "delete_all",
      description: "Deletes everything.",
      parameters: z.object({}),
      execute: async () => {
        deletions += 1;
        return "deleted";
      },
    });
    const hooks = createHookRegistry();
    hooks.on("preActing", ({ call }) =>
      call.name === "delete_all" ? { skip: { content: "Refused by policy.", isError: true } } : undefined,
    );
    const postActing: Array<[string, string]> = [];
    hooks.on("postActing", ({ call, result, memory }) => {
      // The result is already in memory when postActing runs.
      expect(toolResultsIn(memory.messages).some((block) => block.callId === call.id)).toBe(true);
      postActing.push([call.name, result.content]);
    });
    const model = new FakeChatModel([
      step.toolCalls([
        { name: "delete_all", arguments: {} },
        { name: "get_weather", arguments: { city: "Rome" } },
      ]),
      step.text("I could not delete."),
    ]);
    const events: AgentEvent[] = [];
    const memory = new WorkingMemory();
    await createAgent({ model, toolkit: createToolkit([deleteAll, weather]), hooks, systemPrompt: "" }).run({
      memory,
      input: userSays("delete everything, then weather"),
      onEvent: (event) => events.push(event),
    });

    expect(deletions).toBe(0);
    expect(postActing).toEqual([
      ["delete_all", "Refused by policy."],
      ["get_weather", "sun, 21°C"],
    ]);
    expect(toolResultsIn(model.requests[1]!.messages)[0]).toMatchObject({
      content: "Refused by policy.",
      isError: true,
    });
    expect(events.filter((event) => event.type === "tool-start").map((event) => event.type)).toHaveLength(1);
    expect(events.find((event) => event.type === "tool-end" && event.skipped)).toBeDefined();
  });

  it.each([
    [
      "arguments that fail the schema",
      { name: "get_weather", arguments: { town: "Oslo" } },
      /- city: Invalid input/,
    ],
    [
      "an unknown tool",
      { name: "get_wether", arguments: { city: "Oslo" } },
      /Unknown tool "get_wether".*get_weather/,
    ],
    ["arguments that are not JSON", { name: "get_weather", arguments: '{"city": Oslo}' }, /not valid JSON/],
  ])("passes %s back to the model as an error result it can fix", async (_label, call, expected) => {
    const model = new FakeChatModel([step.toolCalls([call]), step.text("Sorry.")]);
    const memory = new WorkingMemory();
    const result = await createAgent({ model, toolkit: createToolkit([weather]), systemPrompt: "" }).run({
      memory,
      input: userSays("weather?"),
    });
    expect(result.stopReason).toBe("final");
    const [answer] = toolResultsIn(model.requests[1]!.messages);
    expect(answer?.isError).toBe(true);
    expect(answer?.content).toMatch(expected);
  });

  it("passes a tool's exception back to the model as an error result", async () => {
    const flaky = defineTool({
      name: "flaky",
      description: "Fails.",
      parameters: z.object({}),
      execute: async () => {
        throw new Error("disk on fire");
      },
    });
    const model = new FakeChatModel([
      step.toolCalls([{ name: "flaky", arguments: {} }]),
      step.text("It failed."),
    ]);
    await createAgent({ model, toolkit: createToolkit([flaky]), systemPrompt: "" }).run({
      memory: new WorkingMemory(),
      input: userSays("try"),
    });
    expect(toolResultsIn(model.requests[1]!.messages)[0]).toMatchObject({
      content: "flaky failed: disk on fire",
      isError: true,
    });
  });

  it("streams text as deltas and reports each phase as an event", async () => {
    const model = new FakeChatModel([
      step.toolCalls([{ id: "call_1", name: "get_weather", arguments: { city: "Oslo" } }]),
      step.text("It is snowing in Oslo."),
    ]);
    const events: AgentEvent[] = [];
    const result = await createAgent({ model, toolkit: createToolkit([weather]), systemPrompt: "" }).run({
      memory: new WorkingMemory(),
      input: userSays("Oslo?"),
      stream: true,
      onEvent: (event) => events.push(event),
    });
    expect(events.map((event) => event.type)).toEqual([
      "reasoning-start",
      "reasoning-end",
      "tool-start",
      "tool-end",
      "reasoning-start",
      "text-delta",
      "text-delta",
      "reasoning-end",
      "run-end",
    ]);
    const text = events.flatMap((event) => (event.type === "text-delta" ? [event.text] : [])).join("");
    expect(text).toBe(messageText(result.reply));
    expect(events.at(-1)).toEqual({ type: "run-end", result });
  });

  it("reads a system prompt function before every step", async () => {
    let reads = 0;
    const model = new FakeChatModel([
      step.toolCalls([{ name: "get_weather", arguments: { city: "Rome" } }]),
      step.text("ok"),
    ]);
    await createAgent({
      model,
      toolkit: createToolkit([weather]),
      systemPrompt: () => {
        reads += 1;
        return `Prompt version ${reads}`;
      },
    }).run({ memory: new WorkingMemory(), input: userSays("hi") });
    expect(model.requests.map((request) => messageText(request.messages[0]!))).toEqual([
      "Prompt version 1",
      "Prompt version 2",
    ]);
  });

  it("sends its output cap with every reasoning step, so prompt and answer fit the window", async () => {
    const model = new FakeChatModel([
      step.toolCalls([{ name: "get_weather", arguments: { city: "Rome" } }]),
      step.text("ok"),
    ]);
    await createAgent({
      model,
      toolkit: createToolkit([weather]),
      systemPrompt: "You help.",
      maxOutputTokens: 700,
    }).run({ memory: new WorkingMemory(), input: userSays("hi") });
    expect(model.requests.map((request) => request.maxOutputTokens)).toEqual([700, 700]);
    expect(() => createAgent({ model, systemPrompt: "x", maxOutputTokens: 0 })).toThrow(/maxOutputTokens/);
  });

  it("keeps running when an event listener throws", async () => {
    const model = new FakeChatModel([step.text("fine")]);
    const result = await createAgent({ model, systemPrompt: "" }).run({
      memory: new WorkingMemory(),
      input: userSays("hi"),
      onEvent: () => {
        throw new Error("UI broke");
      },
    });
    expect(messageText(result.reply)).toBe("fine");
  });
});
