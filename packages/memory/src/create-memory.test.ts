import { writeFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createToolkit } from "@almanac/agent";
import { createMessage, silentLogger } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { type MemoryScope, OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createMemory, type Memory, type MemoryOptions } from "./create-memory.js";

let base: string;
let workspace: string;
let memory: Memory | undefined;
let llm: ScriptedLlm | undefined;

beforeEach(async () => {
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-memory-")));
  workspace = path.join(base, "workspace");
  await mkdir(path.join(workspace, "memory"), { recursive: true });
});

afterEach(async () => {
  await memory?.stop(2000);
  memory = undefined;
  await llm?.close();
  llm = undefined;
  await rm(base, { recursive: true, force: true });
});

function options(extra: Partial<MemoryOptions> = {}): MemoryOptions {
  return {
    workspace,
    stateDir: path.join(base, "state"),
    timeZone: "UTC",
    index: { backend: "sqlite", path: path.join(base, "state", "index.sqlite") },
    contextTokens: 2000,
    toolOutputTokens: 4000,
    scopeOf: (key) =>
      key.startsWith("web:")
        ? OWNER_SCOPE
        : sharedScope({ channel: "discord", account: "default", kind: "group", id: "42" }),
    tokenCounter: createTokenCounter(),
    logger: silentLogger,
    ...extra,
  };
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

async function searchTool(scope: MemoryScope, query: string): Promise<string> {
  if (memory === undefined) throw new Error("no memory open");
  const result = await createToolkit(memory.toolsFor(scope)).execute({
    type: "tool_call",
    id: "call_1",
    name: "memory_search",
    arguments: JSON.stringify({ query }),
  });
  return JSON.stringify(result);
}

const target = (shown: string) => ({ absolute: path.join(workspace, shown), shown, realRoot: workspace });

describe("createMemory", () => {
  it("gives each new session the memory context of the files as they are now (kept while none changed)", async () => {
    memory = await createMemory(options());
    const today = new Date().toISOString().slice(0, 10);
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("MEMORY.md does not exist yet.");
    await memory.store.write("MEMORY.md", "- The boat is called Wren\n");
    const first = await memory.memoryContext(OWNER_SCOPE);
    expect(first).toContain("The boat is called Wren");
    expect(await memory.memoryContext(OWNER_SCOPE)).toBe(first);
    // Edited in place by hand, same length: the new words show.
    await writeFile(path.join(workspace, "MEMORY.md"), "- The boat is called Hawk\n");
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("The boat is called Hawk");
    // Today's log appearing, and a shared chat's own context beside the owner's.
    await writeFile(path.join(workspace, "memory", `${today}.md`), "- Sailed at noon\n");
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("Sailed at noon");
    const shared = sharedScope({ channel: "discord", account: "default", kind: "group", id: "42" });
    expect(await memory.memoryContext(shared)).not.toContain("Hawk");
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("Hawk");
  });

  it("checks the files once for sessions that start together, each still seeing what changed before it asked", async () => {
    memory = await createMemory(options());
    const memoryFile = path.join(workspace, "MEMORY.md");
    await writeFile(memoryFile, "- The boat is called Wren\n");
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("Wren");
    // Count the stat checks (node:fs's lstatSync) of the workspace's files.
    const fsModule = createRequire(import.meta.url)("node:fs") as typeof import("node:fs");
    const original = fsModule.lstatSync;
    let checks = 0;
    vi.spyOn(fsModule, "lstatSync").mockImplementation(((file: string, ...rest: unknown[]) => {
      if (String(file).startsWith(workspace)) checks += 1;
      return (original as (...args: unknown[]) => unknown)(file, ...rest);
    }) as typeof fsModule.lstatSync);
    syncBuiltinESMExports();
    try {
      // Changed: the first session's check sees it and rebuilds the context, which takes a while.
      writeFileSync(memoryFile, "- The boat is called Robin\n");
      const first = memory.memoryContext(OWNER_SCOPE);
      // Edited by hand while that check runs: the sessions that start now must see it.
      writeFileSync(memoryFile, "- The boat is called Kite\n");
      const together = Array.from({ length: 50 }, () => memory?.memoryContext(OWNER_SCOPE));
      const [, ...later] = await Promise.all([first, ...together]);
      for (const text of later) expect(text).toContain("The boat is called Kite");
      // Two checks of three files (the first session's, then one for the fifty), not 51.
      expect(checks).toBe(6);
    } finally {
      vi.restoreAllMocks();
      syncBuiltinESMExports();
    }
  });

  it("indexes what the agent's file tools write, finds it in its scope only, and refuses a stale write", async () => {
    memory = await createMemory(options());
    const seen = new Map<string, string>();
    await memory.writeWorkspaceText(
      target("MEMORY.md"),
      "# Memory\n- The owner's locker code is LOCK-7781\n",
      seen,
    );
    // The file tools make a missing folder before they write; a plain file is written atomically, not through the store.
    await mkdir(path.join(workspace, "notes"));
    await memory.writeWorkspaceText(target("notes/plain.txt"), "not a memory file\n");
    expect(await readFile(path.join(workspace, "notes/plain.txt"), "utf8")).toBe("not a memory file\n");

    // The agent's memory_search, as each scope gets it: the owner finds the code, a group chat does not.
    const owner = await until(async () => {
      const text = await searchTool(OWNER_SCOPE, "LOCK-7781");
      return text.includes("LOCK-7781") ? text : undefined;
    }, "the owner's search to find the locker code");
    expect(owner).toContain("MEMORY.md");
    const shared = await searchTool(memory.scopeOf("discord:default:group:42"), "LOCK-7781");
    expect(shared).not.toContain("LOCK-7781");

    // Someone edits MEMORY.md after the agent read it: the agent's next write of its old version is refused.
    expect(await memory.readWorkspaceText(target("MEMORY.md"), seen)).toContain("LOCK-7781");
    await memory.store.write(
      "MEMORY.md",
      "# Memory\n- The owner's locker code is LOCK-7781\n- Edited by hand\n",
    );
    await expect(
      memory.writeWorkspaceText(target("MEMORY.md"), "# Memory\n- overwritten\n", seen),
    ).rejects.toMatchObject({ code: "memory.conflict" });

    const status = await until(async () => {
      const current = await memory?.indexStatus();
      return current?.state === "idle" ? current : undefined;
    }, "the start-up sync to finish");
    expect(status).toMatchObject({ state: "idle" });
    expect(memory.startReindex()).toBe(true);
    expect(memory.startReindex()).toBe(false);
    expect(await memory.memoryContext(OWNER_SCOPE)).toContain("LOCK-7781");
  });

  it("starts watching and syncing the index only once told to, and says it is syncing until then", async () => {
    await writeFile(path.join(workspace, "MEMORY.md"), "- The gate code is GATE-5150\n");
    let startIndexing = (): void => {};
    memory = await createMemory(
      options({ startIndexing: new Promise<void>((resolve) => (startIndexing = resolve)) }),
    );
    // Long enough for a sync of one file to have run, had it started.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await memory.indexStatus()).toMatchObject({ state: "syncing", files: 0, watching: false });
    expect(await searchTool(OWNER_SCOPE, "GATE-5150")).not.toContain("GATE-5150");
    startIndexing();
    const status = await until(async () => {
      const current = await memory?.indexStatus();
      return current?.state === "idle" ? current : undefined;
    }, "the start-up sync to finish");
    expect(status).toMatchObject({ files: 1, watching: true });
    expect(await searchTool(OWNER_SCOPE, "GATE-5150")).toContain("GATE-5150");
    // The watcher runs: a file written now is found without another sync being asked for.
    await writeFile(path.join(workspace, "memory", "2026-12-02.md"), "- The shed code is SHED-2046\n");
    await until(async () => {
      const text = await searchTool(OWNER_SCOPE, "SHED-2046");
      return text.includes("SHED-2046") ? text : undefined;
    }, "the watched file to be indexed");
  });

  it("stops without waiting for its deadline when the index never started", async () => {
    memory = await createMemory(options({ startIndexing: new Promise<void>(() => {}) }));
    const started = Date.now();
    await memory.stop(5000);
    memory = undefined;
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("without a summarizer model, enqueue is a no-op and there is no queue", async () => {
    memory = await createMemory(options());
    expect(memory.queue).toBeUndefined();
    await memory.enqueue({
      sessionKey: "web:web:dm:owner",
      reason: "new-session",
      messages: [createMessage({ role: "user", content: "FACT-A1" })],
      createdAt: Date.now(),
    });
  });

  it("runs the summarizer over an enqueued batch into the day's log, which the index then finds", async () => {
    llm = await startScriptedLlm({ apiKey: "test-key" });
    llm.enqueue(
      script.toolCalls([{ name: "read_day_log", arguments: {} }]),
      script.toolCalls([
        { name: "append_day_log", arguments: { text: "- 12:00 The boat is called FACT-Q42" } },
      ]),
      script.text("Stored the boat's name."),
    );
    const model = createOpenAIChatModel({
      baseURL: llm.baseURL,
      apiKey: "test-key",
      model: "scripted-model",
      timeoutMs: 5000,
      maxRetries: 0,
    });
    memory = await createMemory(
      options({ summarizer: { model, contextWindow: 8192, maxOutputTokens: 1024, maxAttempts: 3 } }),
    );
    const createdAt = Date.UTC(2026, 11, 1, 12);
    await memory.enqueue({
      sessionKey: "web:web:dm:owner",
      reason: "command",
      messages: [
        createMessage({ role: "user", content: "My boat is called FACT-Q42.", timestamp: createdAt }),
      ],
      summary: "The owner talked about the boat.",
      createdAt,
    });
    await memory.queue?.idle();
    expect(await readFile(path.join(workspace, "memory", "2026-12-01.md"), "utf8")).toContain("FACT-Q42");
    const found = await until(async () => {
      const text = await searchTool(OWNER_SCOPE, "FACT-Q42");
      return text.includes("FACT-Q42") ? text : undefined;
    }, "the daily log to be indexed");
    expect(found).toContain("memory/2026-12-01.md");
  });
});
