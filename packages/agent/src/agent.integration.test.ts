import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMessage, messageText } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { type RecordedChatMessage, type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createAgent } from "./agent.js";
import type { AgentEvent } from "./agent-events.js";
import { createToolkit } from "./toolkit.js";
import { WorkingMemory } from "./working-memory.js";
import { createWorkspaceFileTools } from "./workspace-file-tools.js";

let llm: ScriptedLlm;
let base: string;
let root: string;

beforeEach(async () => {
  llm = await startScriptedLlm({ apiKey: "test-key" });
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-agent-http-")));
  root = path.join(base, "workspace");
  await mkdir(path.join(root, "notes"), { recursive: true });
  await writeFile(path.join(root, "notes", "todo.md"), "- buy milk\n- call Ann\n");
});

afterEach(async () => {
  await llm.close();
  await rm(base, { recursive: true, force: true });
});

function createWorkspaceAgent() {
  const model = createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey: "test-key",
    model: "scripted-model",
    timeoutMs: 5000,
    maxRetries: 0,
  });
  const toolkit = createToolkit(createWorkspaceFileTools({ root }));
  return createAgent({ model, toolkit, systemPrompt: "You keep the user's notes." });
}

async function whenServerHasRequests(count: number): Promise<void> {
  while (llm.chatRequests().length < count) await new Promise((resolve) => setTimeout(resolve, 5));
}

function toolMessages(messages: readonly RecordedChatMessage[]): Array<[string | undefined, unknown]> {
  return messages
    .filter((message) => message.role === "tool")
    .map((message) => [message.tool_call_id, message.content]);
}

describe("agent over HTTP with the scripted model server", () => {
  it("runs a multi-step, parallel tool-using turn on the workspace files", async () => {
    llm.enqueue(
      script.toolCalls([
        { id: "call_read", name: "read_file", arguments: { path: "notes/todo.md" } },
        { id: "call_list", name: "list_files", arguments: { recursive: true } },
      ]),
      script.toolCalls([
        {
          id: "call_edit",
          name: "edit_file",
          arguments: { path: "notes/todo.md", old_text: "buy milk", new_text: "buy oat milk" },
        },
        {
          id: "call_log",
          name: "write_file",
          arguments: { path: "memory/today.md", content: "# Today\n- changed milk\n" },
        },
        { id: "call_bad", name: "read_file", arguments: { path: "../outside.md" } },
      ]),
      script.text("Done: oat milk it is."),
    );
    const memory = new WorkingMemory();
    const result = await createWorkspaceAgent().run({
      memory,
      input: createMessage({ role: "user", content: "Make it oat milk and log it." }),
    });

    expect(llm.rejections()).toEqual([]);
    expect(result).toMatchObject({ stopReason: "final", iterations: 3 });
    expect(messageText(result.reply)).toBe("Done: oat milk it is.");
    expect(await readFile(path.join(root, "notes", "todo.md"), "utf8")).toBe("- buy oat milk\n- call Ann\n");
    expect(await readFile(path.join(root, "memory", "today.md"), "utf8")).toBe("# Today\n- changed milk\n");

    const requests = llm.chatRequests();
    expect(requests).toHaveLength(3);
    const [first, second, third] = requests;
    expect(first?.model).toBe("scripted-model");
    expect(first?.messages.map((message) => message.role)).toEqual(["system", "user"]);
    const tools = (first?.tools ?? []) as Array<{ function: { name: string } }>;
    expect(tools.map((tool) => tool.function.name)).toEqual([
      "read_file",
      "write_file",
      "edit_file",
      "append_file",
      "list_files",
    ]);
    expect(toolMessages(second?.messages ?? [])).toEqual([
      ["call_read", "[notes/todo.md: lines 1-2 of 2]\n- buy milk\n- call Ann"],
      ["call_list", "notes/\nnotes/todo.md"],
    ]);
    const lastResults = toolMessages(third?.messages ?? []).slice(2);
    expect(lastResults.map(([id]) => id)).toEqual(["call_edit", "call_log", "call_bad"]);
    expect(lastResults[0]?.[1]).toBe("Edited notes/todo.md: replaced 1 occurrence.");
    expect(lastResults[2]?.[1]).toMatch(/workspace\.path_outside/);
    expect(memory.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "tool",
      "tool",
      "assistant",
      "tool",
      "tool",
      "tool",
      "assistant",
    ]);
  });

  it("streams the reply and keeps memory valid for the strict server across a failed call", async () => {
    llm.enqueue(
      script.toolCalls([{ id: "call_read", name: "read_file", arguments: { path: "notes/todo.md" } }]),
      script.error(500),
      script.text("Your list has milk and Ann on it."),
    );
    const agent = createWorkspaceAgent();
    const memory = new WorkingMemory();
    await expect(
      agent.run({
        memory,
        input: createMessage({ role: "user", content: "What is on my list?" }),
        stream: true,
      }),
    ).rejects.toMatchObject({ category: "provider" });

    const events: AgentEvent[] = [];
    const result = await agent.run({
      memory,
      input: createMessage({ role: "user", content: "Try again?" }),
      stream: true,
      onEvent: (event) => events.push(event),
    });

    expect(llm.rejections()).toEqual([]);
    const deltas = events.flatMap((event) => (event.type === "text-delta" ? [event.text] : []));
    expect(deltas.join("")).toBe("Your list has milk and Ann on it.");
    expect(messageText(result.reply)).toBe("Your list has milk and Ann on it.");
    const last = llm.chatRequests().at(-1);
    expect(last?.stream).toBe(true);
    expect(last?.messages.map((message) => message.role)).toEqual([
      "system",
      "user",
      "assistant",
      "tool",
      "user",
    ]);
  });

  it("stops a run whose model call hangs when the caller aborts, leaving memory usable", async () => {
    llm.enqueue(script.hang(), script.text("Here now."));
    const agent = createWorkspaceAgent();
    const memory = new WorkingMemory();
    const controller = new AbortController();
    const running = agent.run({
      memory,
      input: createMessage({ role: "user", content: "Hello?" }),
      signal: controller.signal,
      onEvent: (event) => {
        // Abort once the server holds the request, so the hang step is the one being cut.
        if (event.type === "reasoning-start") void whenServerHasRequests(1).then(() => controller.abort());
      },
    });
    await expect(running).rejects.toMatchObject({ code: "agent.aborted" });

    const result = await agent.run({
      memory,
      input: createMessage({ role: "user", content: "Still there?" }),
    });
    expect(messageText(result.reply)).toBe("Here now.");
    expect(llm.rejections()).toEqual([]);
    expect(memory.messages.map((message) => message.role)).toEqual(["user", "user", "assistant"]);
    expect(llm.chatRequests()).toHaveLength(2);
  });
});
