import { type ChatResponse, createMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { AgentError } from "./errors.js";
import { createHookRegistry, type PostReasoningContext, type PreActingContext } from "./hooks.js";
import { WorkingMemory } from "./working-memory.js";

function postReasoningContext(): PostReasoningContext {
  const response: ChatResponse = {
    message: createMessage({ role: "assistant", content: "hi" }),
    finishReason: "stop",
    usage: undefined,
    model: "fake-model",
    attempts: 1,
  };
  return { memory: new WorkingMemory(), iteration: 1, response };
}

function preActingContext(name: string): PreActingContext {
  return {
    memory: new WorkingMemory(),
    iteration: 1,
    call: { type: "tool_call", id: "call_1", name, arguments: "{}" },
  };
}

describe("createHookRegistry", () => {
  it("runs handlers in registration order, each awaited before the next starts", async () => {
    const hooks = createHookRegistry();
    const order: string[] = [];
    hooks.on("postReasoning", async () => {
      await new Promise((resolve) => setTimeout(resolve, 10));
      order.push("first");
    });
    hooks.on("postReasoning", () => {
      order.push("second");
    });
    await hooks.run("postReasoning", postReasoningContext());
    expect(order).toEqual(["first", "second"]);
  });

  it("stops calling a handler once it is unsubscribed", async () => {
    const hooks = createHookRegistry();
    let calls = 0;
    const off = hooks.on("postReasoning", () => {
      calls += 1;
    });
    const response: ChatResponse = {
      message: createMessage({ role: "assistant", content: "hi" }),
      finishReason: "stop",
      usage: undefined,
      model: "fake-model",
      attempts: 1,
    };
    const context = { memory: new WorkingMemory(), iteration: 1, response };
    await hooks.run("postReasoning", context);
    off();
    await hooks.run("postReasoning", context);
    expect(calls).toBe(1);
  });

  it("returns the first skip from preActing and does not run the handlers after it", async () => {
    const hooks = createHookRegistry();
    let laterRan = false;
    hooks.on("preActing", ({ call }) =>
      call.name === "other" ? { skip: { content: "not this" } } : undefined,
    );
    hooks.on("preActing", ({ call }) =>
      call.name === "delete_all" ? { skip: { content: "refused", isError: true } } : undefined,
    );
    hooks.on("preActing", () => {
      laterRan = true;
    });
    expect(await hooks.run("preActing", preActingContext("delete_all"))).toEqual({
      skip: { content: "refused", isError: true },
    });
    expect(laterRan).toBe(false);
    expect(await hooks.run("preActing", preActingContext("read_file"))).toBeUndefined();
    expect(laterRan).toBe(true);
  });

  it("turns a throwing handler into agent.hook_failed with the original error as cause", async () => {
    const hooks = createHookRegistry();
    const original = new Error("compaction exploded");
    hooks.on("postReasoning", () => {
      throw original;
    });
    const failure = await hooks.run("postReasoning", postReasoningContext()).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(AgentError);
    expect(failure).toMatchObject({ code: "agent.hook_failed", category: "internal", cause: original });
    expect((failure as Error).message).toContain("compaction exploded");
  });

  it("runs the same function twice when it is registered twice", async () => {
    const hooks = createHookRegistry();
    let calls = 0;
    const handler = () => {
      calls += 1;
    };
    const off = hooks.on("postReasoning", handler);
    hooks.on("postReasoning", handler);
    off();
    await hooks.run("postReasoning", postReasoningContext());
    expect(calls).toBe(1);
  });
});
