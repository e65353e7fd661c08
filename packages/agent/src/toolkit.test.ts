import { type ToolCallBlock, UserError } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AgentError } from "./errors.js";
import { createToolkit, defineTool, type ToolContext } from "./toolkit.js";

function call(name: string, args: string, id = "call_1"): ToolCallBlock {
  return { type: "tool_call", id, name, arguments: args };
}

const echo = defineTool({
  name: "echo",
  description: "Repeat text.",
  parameters: z.object({
    text: z.string().describe("What to repeat"),
    times: z.number().int().min(1).default(1),
  }),
  async execute({ text, times }) {
    return text.repeat(times);
  },
});

describe("createToolkit", () => {
  it("describes each tool's arguments as JSON Schema for the model", () => {
    const [spec] = createToolkit([echo]).specs();
    expect(spec).toEqual({
      name: "echo",
      description: "Repeat text.",
      parameters: {
        type: "object",
        properties: {
          text: { type: "string", description: "What to repeat" },
          times: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER, default: 1 },
        },
        required: ["text"],
      },
    });
  });

  it("runs a tool with its validated arguments, defaults applied", async () => {
    const result = await createToolkit([echo]).execute(call("echo", '{"text":"ab","times":2}'));
    expect(result).toEqual({ type: "tool_result", callId: "call_1", content: "abab" });
    expect(await createToolkit([echo]).execute(call("echo", '{"text":"ab"}'))).toMatchObject({
      content: "ab",
    });
  });

  it("refuses two tools with the same name when the toolkit is created", () => {
    expect(() => createToolkit([echo, echo])).toThrow(AgentError);
    expect(() => createToolkit([echo, echo])).toThrow(/"echo"/);
  });

  it("refuses a tool name that providers would reject", () => {
    expect(() =>
      defineTool({ name: "read file", description: "", parameters: z.object({}), execute: async () => "" }),
    ).toThrow(expect.objectContaining({ code: "agent.tool_invalid" }));
  });

  it("answers an unknown tool with an error that names the available tools", async () => {
    const result = await createToolkit([echo]).execute(call("shout", "{}"));
    expect(result.isError).toBe(true);
    expect(result.content).toContain('Unknown tool "shout"');
    expect(result.content).toContain("Available tools: echo");
  });

  it("answers arguments that are not JSON with the parse problem", async () => {
    const result = await createToolkit([echo]).execute(call("echo", '{"text": "a",'));
    expect(result.isError).toBe(true);
    expect(result.content).toMatch(/not valid JSON \(.+\)/);
  });

  it("lists every schema problem with its path so the model can fix its call", async () => {
    const nested = defineTool({
      name: "plan",
      description: "Plan a trip.",
      parameters: z.object({ city: z.string(), stops: z.array(z.object({ day: z.number() })) }),
      execute: async () => "ok",
    });
    const result = await createToolkit([nested]).execute(call("plan", '{"stops":[{"day":"monday"}]}'));
    expect(result.isError).toBe(true);
    expect(result.content).toContain("- city: Invalid input: expected string, received undefined");
    expect(result.content).toContain("- stops.0.day: Invalid input: expected number, received string");
  });

  it("treats empty arguments as an empty object", async () => {
    const ping = defineTool({
      name: "ping",
      description: "Ping.",
      parameters: z.object({}),
      execute: async () => "pong",
    });
    expect(await createToolkit([ping]).execute(call("ping", ""))).toMatchObject({ content: "pong" });
  });

  it("reports a tool's exception as an error result instead of throwing", async () => {
    const failing = defineTool({
      name: "fail",
      description: "Always fails.",
      parameters: z.object({}),
      execute: async () => {
        throw new UserError("workspace.not_found", '"a.md" does not exist.');
      },
    });
    const result = await createToolkit([failing]).execute(call("fail", "{}"));
    expect(result).toEqual({
      type: "tool_result",
      callId: "call_1",
      content: 'fail failed: workspace.not_found: "a.md" does not exist.',
      isError: true,
    });
  });

  it("keeps an error flag the tool returns itself", async () => {
    const soft = defineTool({
      name: "soft",
      description: "Soft failure.",
      parameters: z.object({}),
      execute: async () => ({ content: "nothing matched", isError: true }),
    });
    expect(await createToolkit([soft]).execute(call("soft", "{}"))).toMatchObject({
      content: "nothing matched",
      isError: true,
    });
  });

  it("stops waiting for a tool after its timeout and aborts the tool's signal", async () => {
    let seen: ToolContext | undefined;
    const hang = defineTool({
      name: "hang",
      description: "Never finishes.",
      parameters: z.object({}),
      timeoutMs: 20,
      execute: (_args, context) => {
        seen = context;
        return new Promise(() => {});
      },
    });
    const result = await createToolkit([hang], { timeoutMs: 60_000 }).execute(call("hang", "{}", "call_9"));
    expect(result.isError).toBe(true);
    expect(result.content).toContain("did not finish within 20 ms");
    expect(seen?.signal.aborted).toBe(true);
    expect(seen?.callId).toBe("call_9");
  });

  it("stops a running tool when the run is cancelled and does not start one after", async () => {
    const started: string[] = [];
    const wait = defineTool({
      name: "wait",
      description: "Waits for cancellation.",
      parameters: z.object({}),
      execute: (_args, context) => {
        started.push(context.callId);
        return new Promise(() => {});
      },
    });
    const toolkit = createToolkit([wait]);
    const controller = new AbortController();
    const running = toolkit.execute(call("wait", "{}", "a"), { signal: controller.signal });
    controller.abort();
    expect(await running).toMatchObject({
      isError: true,
      content: "wait was stopped: the run was cancelled.",
    });
    expect(await toolkit.execute(call("wait", "{}", "b"), { signal: controller.signal })).toMatchObject({
      isError: true,
      content: "wait was not run: the run was cancelled.",
    });
    expect(started).toEqual(["a"]);
  });

  it("cuts output over the limit and says how much was cut", async () => {
    const result = await createToolkit([echo], { maxOutputChars: 10 }).execute(
      call("echo", '{"text":"x","times":25}'),
    );
    expect(result.content).toBe("xxxxxxxxxx\n[… output cut: 15 of 25 characters removed]");
  });
});
