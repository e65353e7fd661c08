import {
  createMessage,
  MISSING_TOOL_RESULT_TEXT,
  messageText,
  ProviderError,
  toolCallsOf,
  toolResultsOf,
} from "@almanac/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { FakeChatModel, step } from "../test/fake-chat-model.js";
import { toolPairingProblems } from "../test/tool-pairing.js";
import { createAgent } from "./agent.js";
import { AgentError } from "./errors.js";
import { createHookRegistry } from "./hooks.js";
import { createToolkit, defineTool, type ToolContext } from "./toolkit.js";
import { WorkingMemory } from "./working-memory.js";

const noop = defineTool({
  name: "noop",
  description: "Does nothing.",
  parameters: z.object({}),
  execute: async () => "done",
});

function userSays(text: string) {
  return createMessage({ role: "user", content: text });
}

describe("createAgent when things go wrong", () => {
  it("stops at the step limit with a plain message and leaves every call answered", async () => {
    const model = new FakeChatModel(
      Array.from({ length: 5 }, () => step.toolCalls([{ name: "noop", arguments: {} }])),
    );
    const memory = new WorkingMemory();
    const result = await createAgent({
      model,
      toolkit: createToolkit([noop]),
      systemPrompt: "",
      maxIterations: 3,
    }).run({
      memory,
      input: userSays("loop forever"),
    });

    expect(result.stopReason).toBe("max_iterations");
    expect(result.iterations).toBe(3);
    expect(model.requests).toHaveLength(3);
    expect(result.reply.role).toBe("assistant");
    expect(messageText(result.reply)).toMatch(/limit of 3 steps/);
    expect(messageText(result.reply)).toMatch(/continue/);
    expect(memory.messages.at(-1)).toBe(result.reply);
    expect(toolPairingProblems(memory.messages)).toEqual([]);
  });

  it("refuses a step limit below one when the agent is created", () => {
    expect(() => createAgent({ model: new FakeChatModel(), systemPrompt: "", maxIterations: 0 })).toThrow(
      expect.objectContaining({ code: "config.invalid", message: expect.stringContaining("maxIterations") }),
    );
  });

  it("lets a model error propagate and leaves memory valid for the next run", async () => {
    const outage = new ProviderError("llm.server", "HTTP 500", { isRetryable: true, status: 500 });
    const model = new FakeChatModel([step.toolCalls([{ name: "noop", arguments: {} }]), step.error(outage)]);
    const memory = new WorkingMemory();
    const agent = createAgent({ model, toolkit: createToolkit([noop]), systemPrompt: "" });

    await expect(agent.run({ memory, input: userSays("first") })).rejects.toBe(outage);
    expect(memory.messages.map((message) => message.role)).toEqual(["user", "assistant", "tool"]);
    expect(toolPairingProblems(memory.messages)).toEqual([]);

    model.enqueue(step.text("Back again."));
    const retry = await agent.run({ memory, input: userSays("second") });
    expect(messageText(retry.reply)).toBe("Back again.");
    expect(toolPairingProblems(model.requests.at(-1)!.messages)).toEqual([]);
  });

  it("fails the run when a hook throws and answers the calls it left open", async () => {
    const hooks = createHookRegistry();
    const bug = new TypeError("cannot read properties of undefined");
    hooks.on("preActing", ({ call }) => {
      if (call.id === "call_2") throw bug;
    });
    let runs = 0;
    const counted = defineTool({
      name: "counted",
      description: "Counts runs.",
      parameters: z.object({}),
      execute: async () => {
        runs += 1;
        return "ran";
      },
    });
    const model = new FakeChatModel([
      step.toolCalls([
        { id: "call_1", name: "counted", arguments: {} },
        { id: "call_2", name: "counted", arguments: {} },
      ]),
    ]);
    const memory = new WorkingMemory();
    const failure = await createAgent({ model, toolkit: createToolkit([counted]), hooks, systemPrompt: "" })
      .run({ memory, input: userSays("go") })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AgentError);
    expect(failure).toMatchObject({ code: "agent.hook_failed", cause: bug });
    expect(runs).toBe(0);
    expect(toolPairingProblems(memory.messages)).toEqual([]);
    const answers = memory.messages.flatMap((message) => toolResultsOf(message));
    expect(answers.map((answer) => answer.callId)).toEqual(["call_1", "call_2"]);
    expect(answers.every((answer) => answer.isError === true && answer.content.includes("not run"))).toBe(
      true,
    );
  });

  it("stops between steps when aborted, passing the signal to the running tool", async () => {
    const controller = new AbortController();
    let toolSignal: AbortSignal | undefined;
    const slow = defineTool({
      name: "slow",
      description: "Waits until cancelled.",
      parameters: z.object({}),
      execute: (_args, context: ToolContext) => {
        toolSignal = context.signal;
        controller.abort();
        return new Promise(() => {});
      },
    });
    const model = new FakeChatModel([
      step.toolCalls([{ name: "slow", arguments: {} }]),
      step.text("never asked"),
    ]);
    const memory = new WorkingMemory();
    const failure = await createAgent({ model, toolkit: createToolkit([slow]), systemPrompt: "" })
      .run({ memory, input: userSays("go"), signal: controller.signal })
      .catch((error: unknown) => error);

    expect(failure).toMatchObject({ code: "agent.aborted", category: "user" });
    expect(toolSignal?.aborted).toBe(true);
    expect(model.requests).toHaveLength(1);
    expect(model.requests[0]!.signal).toBe(controller.signal);
    expect(model.remaining).toBe(1);
    expect(toolPairingProblems(memory.messages)).toEqual([]);
  });

  it("does not touch memory when the signal has already fired", async () => {
    const controller = new AbortController();
    controller.abort();
    const memory = new WorkingMemory();
    const model = new FakeChatModel([step.text("hi")]);
    await expect(
      createAgent({ model, systemPrompt: "" }).run({
        memory,
        input: userSays("hi"),
        signal: controller.signal,
      }),
    ).rejects.toMatchObject({ code: "agent.aborted" });
    expect(memory.messages).toEqual([]);
    expect(model.requests).toHaveLength(0);
  });

  it("reports a model failure during cancellation as agent.aborted with the model's error as cause", async () => {
    const controller = new AbortController();
    const cancelled = new ProviderError("llm.aborted", "request aborted", { isRetryable: false });
    const model = new FakeChatModel([
      step.respond(async () => {
        controller.abort();
        return step.error(cancelled);
      }),
    ]);
    const memory = new WorkingMemory();
    await expect(
      createAgent({ model, systemPrompt: "" }).run({
        memory,
        input: userSays("hi"),
        signal: controller.signal,
      }),
    ).rejects.toMatchObject({ code: "agent.aborted", cause: cancelled });
    expect(memory.messages.map((message) => message.role)).toEqual(["user"]);
  });

  it("answers tool calls left open by an interrupted earlier run before going on", async () => {
    const memory = new WorkingMemory({
      messages: [
        userSays("old question"),
        createMessage({
          role: "assistant",
          content: [{ type: "tool_call", id: "call_lost", name: "noop", arguments: "{}" }],
        }),
      ],
    });
    const model = new FakeChatModel([step.text("Fresh answer.")]);
    await createAgent({ model, toolkit: createToolkit([noop]), systemPrompt: "" }).run({
      memory,
      input: userSays("new question"),
    });
    expect(toolPairingProblems(model.requests[0]!.messages)).toEqual([]);
    const lost = memory.messages.flatMap((message) => toolResultsOf(message));
    expect(lost).toEqual([
      {
        type: "tool_result",
        callId: "call_lost",
        content: MISSING_TOOL_RESULT_TEXT,
        isError: true,
      },
    ]);
    expect(toolCallsOf(memory.messages[1]!)).toHaveLength(1);
  });
});
