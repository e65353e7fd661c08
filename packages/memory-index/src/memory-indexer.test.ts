import { mkdir, mkdtemp, rename, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createOpenAIEmbedder } from "@almanac/llm";
import { createRecordingLogger, type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { embeddedTexts, waitFor } from "../test/test-support.js";
import { createEmbeddingGate } from "./embedding-gate.js";
import { createMemoryIndexer, type MemoryIndexer, type SyncProgress } from "./memory-indexer.js";
import { createMemorySearch } from "./memory-search.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

let workspace: string;
let llm: ScriptedLlm;
let backend: MemoryIndexBackend;
let indexer: MemoryIndexer | undefined;

async function write(relative: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.join(workspace, relative)), { recursive: true });
  await writeFile(path.join(workspace, relative), content);
}

function embedder() {
  return createOpenAIEmbedder({
    baseURL: llm.baseURL,
    apiKey: "",
    model: "scripted-embedding",
    maxRetries: 0,
  });
}

/** Small chunks, so that each of {@link threeSections}' sections is a chunk of its own. */
const chunking = { maxTokens: 24, overlapTokens: 4 };
const threeSections = (middle: string) =>
  `# Travel\n\nPassport renewal is due in March.\n\n# Food\n\n${middle}\n\n# Health\n\nDentist every six months.\n`;

beforeEach(async () => {
  workspace = await mkdtemp(path.join(tmpdir(), "almanac-indexer-"));
  llm = await startScriptedLlm({ embeddingDimensions: 16 });
  backend = createSqliteIndex({ path: path.join(workspace, "state", "memory.sqlite") });
});

afterEach(async () => {
  await indexer?.close();
  indexer = undefined;
  await backend.close();
  await llm.close();
  await rm(workspace, { recursive: true, force: true });
});

describe("createMemoryIndexer sync", () => {
  it("indexes MEMORY.md and memory/**/*.md, and nothing else", async () => {
    await write("MEMORY.md", "Prefers tea over coffee.\n");
    await write("memory/2025-03-01.md", "Met Priya about the Apollo launch.\n");
    await write("memory/people/priya.md", "Priya leads Apollo.\n");
    await write("memory/.draft.md", "hidden draft\n");
    await write("memory/notes.txt", "not markdown\n");
    await write("notes/elsewhere.md", "outside memory\n");
    await symlink(path.join(workspace, "notes", "elsewhere.md"), path.join(workspace, "memory", "link.md"));
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder() });
    const report = await indexer.sync();
    expect(report).toMatchObject({ filesScanned: 3, filesIndexed: 3, chunksIndexed: 3, chunksEmbedded: 3 });
    expect((await backend.listFiles()).map((file) => [file.path, file.source])).toEqual([
      ["MEMORY.md", "memory"],
      ["memory/2025-03-01.md", "daily"],
      ["memory/people/priya.md", "notes"],
    ]);
    const status = await indexer.status();
    expect(status).toMatchObject({
      backend: "sqlite",
      files: 3,
      chunks: 3,
      embeddedChunks: 3,
      pendingChunks: 0,
    });
    expect(status.embedding).toMatchObject({ configured: true, mode: "hybrid", model: "scripted-embedding" });
    expect(status.lastSync?.report.filesIndexed).toBe(3);
  });

  it("indexes every file of a workspace larger than the files it reads ahead, and reports each once, from 0 of them", async () => {
    const days = Array.from({ length: 11 }, (_, index) => `memory/2025-03-${String(index + 10)}.md`);
    for (const [index, day] of days.entries())
      await write(day, `Day ${index}: met person${index} about plan${index}.\n`);
    indexer = createMemoryIndexer({ workspace, backend });
    const progress: SyncProgress[] = [];
    const report = await indexer.sync({ onProgress: (step) => progress.push(step) });
    expect(report).toMatchObject({
      filesScanned: 11,
      filesIndexed: 11,
      filesUnchanged: 0,
      chunksIndexed: 11,
    });
    expect((await backend.listFiles()).map((file) => file.path)).toEqual(days);
    expect(progress.filter((step) => step.phase === "index").map((step) => step.done)).toEqual([
      0,
      ...days.map((_, index) => index + 1),
    ]);
    expect(progress.every((step) => step.total === days.length)).toBe(true);
    const { results } = await createMemorySearch({ backend }).search("person7");
    expect(results.map((result) => result.path)).toEqual(["memory/2025-03-17.md"]);
    await write(days[3]!, "Day 3 was rewritten.\n");
    await unlink(path.join(workspace, days[5]!));
    expect(await indexer.sync()).toMatchObject({ filesIndexed: 1, filesUnchanged: 9, filesRemoved: 1 });
  });

  it("lets the event loop run while a large sync works (requests are served during a start-up sync)", async () => {
    const words = ["budget", "deploy", "garden", "invoice", "kernel", "lantern", "meadow", "orbit", "quartz"];
    for (let day = 0; day < 300; day += 1) {
      const lines = Array.from(
        { length: 30 },
        (_, line) =>
          `- ${words[(day + line) % words.length]} note ${day}.${line} about plan${day * 31 + line}`,
      );
      await write(
        `memory/2025-${String(1 + (day % 12)).padStart(2, "0")}-${day}.md`,
        `${lines.join("\n")}\n`,
      );
    }
    indexer = createMemoryIndexer({ workspace, backend });
    // A probe that runs on every turn of the event loop: the longest wait between two of its turns is the
    // longest the sync kept the loop (and an HTTP request) waiting.
    const started = performance.now();
    let last = started;
    let longest = 0;
    let turns = 0;
    let running = true;
    const probe = (): void => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      turns += 1;
      if (running) setImmediate(probe);
    };
    setImmediate(probe);
    const report = await indexer.sync();
    running = false;
    const ended = performance.now();
    longest = Math.max(longest, ended - last);
    const took = ended - started;
    expect(report.filesIndexed).toBe(300);
    expect(turns).toBeGreaterThan(3);
    expect(longest).toBeLessThan(took / 3);
  });

  it("writes a sync's changed files in batches: one backend call for many small files", async () => {
    const days = Array.from(
      { length: 30 },
      (_, index) => `memory/2025-04-${String(index + 1).padStart(2, "0")}.md`,
    );
    for (const [index, day] of days.entries()) await write(day, `Day ${index}: walked dog${index}.\n`);
    const batches: string[][] = [];
    const counting: MemoryIndexBackend = {
      ...backend,
      upsertFiles: (files) => {
        batches.push(files.map((entry) => entry.file.path));
        return backend.upsertFiles(files);
      },
    };
    indexer = createMemoryIndexer({ workspace, backend: counting });
    expect(await indexer.sync()).toMatchObject({ filesIndexed: 30, chunksIndexed: 30 });
    expect(batches).toEqual([days]);
    const { results } = await createMemorySearch({ backend }).search("dog17");
    expect(results.map((result) => result.path)).toEqual([days[17]]);
  });

  it("skips only the file a batch failed on, writing the others of its batch", async () => {
    for (const name of ["a", "b", "bad", "c"])
      await write(`memory/${name}.md`, `Note ${name}: heron${name}.\n`);
    const failing: MemoryIndexBackend = {
      ...backend,
      upsertFiles: async (files) => {
        if (files.some((entry) => entry.file.path === "memory/bad.md")) throw new Error("disk said no");
        return backend.upsertFiles(files);
      },
    };
    const logger = createRecordingLogger();
    indexer = createMemoryIndexer({ workspace, backend: failing, logger });
    expect(await indexer.sync()).toMatchObject({ filesScanned: 4, filesIndexed: 3 });
    expect((await backend.listFiles()).map((file) => file.path)).toEqual([
      "memory/a.md",
      "memory/b.md",
      "memory/c.md",
    ]);
    expect(
      logger.entries
        .filter((entry) => entry.message === "cannot index memory file; skipped")
        .map((entry) => entry.fields.path),
    ).toEqual(["memory/bad.md"]);
  });

  it("skips unchanged files on the next sync and removes files deleted meanwhile", async () => {
    await write("MEMORY.md", "Prefers tea.\n");
    await write("memory/a.md", "Alpha.\n");
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder() });
    await indexer.sync();
    const requestsAfterFirst = llm.embeddingRequests().length;
    await unlink(path.join(workspace, "memory", "a.md"));
    const report = await indexer.sync();
    expect(report).toMatchObject({ filesScanned: 1, filesIndexed: 0, filesUnchanged: 1, filesRemoved: 1 });
    expect(llm.embeddingRequests()).toHaveLength(requestsAfterFirst);
  });

  it("re-embeds only the chunks an edit changed", async () => {
    await write("MEMORY.md", threeSections("Allergic to peanuts."));
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder(), chunking });
    await indexer.sync();
    expect(embeddedTexts(llm.embeddingRequests())).toHaveLength(3);
    await write("MEMORY.md", `${threeSections("Allergic to peanuts and shellfish.")}\n`);
    const report = await indexer.sync();
    expect(report).toMatchObject({
      filesIndexed: 1,
      chunksIndexed: 3,
      chunksFromCache: 2,
      chunksEmbedded: 1,
    });
    const texts = embeddedTexts(llm.embeddingRequests());
    expect(texts).toHaveLength(4);
    expect(texts[3]).toContain("shellfish");
  });

  it("rebuilds a deleted index from the Markdown, re-embedding nothing the cache holds", async () => {
    await write("MEMORY.md", threeSections("Allergic to peanuts."));
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder(), chunking });
    await indexer.sync();
    const progress: SyncProgress[] = [];
    const report = await indexer.reindex({ onProgress: (step) => progress.push(step) });
    expect(report).toMatchObject({
      filesIndexed: 1,
      chunksIndexed: 3,
      chunksFromCache: 3,
      chunksEmbedded: 0,
    });
    expect(progress.slice(0, 2)).toEqual([
      { phase: "index", done: 0, total: 1 },
      { phase: "index", done: 1, total: 1 },
    ]);
    expect(progress.at(-1)).toMatchObject({ phase: "embed", done: 3, total: 3 });

    await indexer.close();
    await backend.close();
    await rm(path.join(workspace, "state"), { recursive: true });
    backend = createSqliteIndex({ path: path.join(workspace, "state", "memory.sqlite") });
    indexer = createMemoryIndexer({ workspace, backend, chunking });
    expect(await indexer.sync()).toMatchObject({ filesIndexed: 1, chunksIndexed: 3 });
    const search = createMemorySearch({ backend });
    expect((await search.search("peanuts")).results[0]?.path).toBe("MEMORY.md");
  });

  it("drops vectors of another embedding model and embeds again", async () => {
    await write("MEMORY.md", "Prefers tea.\n");
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder() });
    await indexer.sync();
    await indexer.close();
    const other = createOpenAIEmbedder({
      baseURL: llm.baseURL,
      apiKey: "",
      model: "other-model",
      maxRetries: 0,
    });
    indexer = createMemoryIndexer({ workspace, backend, embedder: other });
    const report = await indexer.sync();
    expect(report.chunksEmbedded).toBe(1);
    expect(await backend.stats()).toMatchObject({ embeddedChunks: 1, vectorModel: "other-model" });
  });
});

describe("embedding provider failures", () => {
  it("answers full-text only and says so, logs once per change, then recovers and catches up", async () => {
    let now = 1_000_000;
    const logger = createRecordingLogger();
    const gate = createEmbeddingGate({
      embedder: embedder(),
      failureThreshold: 1,
      cooldownMs: 10_000,
      clock: () => now,
      logger,
    });
    indexer = createMemoryIndexer({ workspace, backend, embedder: gate, logger });
    const search = createMemorySearch({ backend, embedder: gate, logger });
    await write("MEMORY.md", "The garage code is 4471.\n");
    llm.enqueueEmbeddings(script.error(500));

    expect(await indexer.sync()).toMatchObject({ chunksIndexed: 1, chunksEmbedded: 0 });
    const requestsWhileDown = llm.embeddingRequests().length;
    for (const _ of [1, 2]) {
      const response = await search.search("garage code");
      expect(response.mode).toBe("text");
      expect(response.note).toMatch(/^Full-text search only: the embedding provider is unavailable/u);
      expect(response.results.map((result) => [result.path, result.mode])).toEqual([["MEMORY.md", "text"]]);
    }
    expect(llm.embeddingRequests()).toHaveLength(requestsWhileDown); // the open circuit spares the provider
    const warnings = () =>
      logger.entries.filter((entry) => entry.message?.startsWith("embedding provider unavailable"));
    expect(warnings()).toHaveLength(1);
    expect((await indexer.status()).pendingChunks).toBe(1);

    now += 10_000; // cool-down over: the next call is the half-open trial, and it succeeds
    const recovered = await search.search("garage code");
    expect(recovered).toMatchObject({ mode: "hybrid" });
    expect(recovered.note).toBeUndefined();
    expect(
      logger.entries.filter((entry) => entry.message?.startsWith("embedding provider is back")),
    ).toHaveLength(1);
    expect(warnings()).toHaveLength(1);

    await indexer.sync();
    expect(await indexer.status()).toMatchObject({ embeddedChunks: 1, pendingChunks: 0 });
  });

  it("states full-text mode when no provider is configured", async () => {
    await write("MEMORY.md", "The garage code is 4471.\n");
    const logger = createRecordingLogger();
    indexer = createMemoryIndexer({ workspace, backend, logger });
    await indexer.sync();
    const response = await createMemorySearch({ backend, logger }).search("garage");
    expect(response).toMatchObject({
      mode: "text",
      note: expect.stringContaining("no embedding provider is configured"),
    });
    expect(response.results).toHaveLength(1);
    expect((await indexer.status()).embedding).toMatchObject({ configured: false, mode: "text" });
  });
});

describe("createMemoryIndexer watch", () => {
  const found = async (query: string) =>
    (await createMemorySearch({ backend }).search(query, { minScore: 0 })).results.map(
      (result) => result.path,
    );

  it("indexes files written, edited, renamed into place and deleted while watching", async () => {
    indexer = createMemoryIndexer({ workspace, backend, debounceMs: 30 });
    await indexer.sync();
    await indexer.watch();

    await write("MEMORY.md", "Wifi password is hunter2.\n");
    await waitFor(async () => (await found("hunter2")).includes("MEMORY.md"), 5000, "a new MEMORY.md");

    await write("memory/2025-05-01.md", "Booked the flight to Lisbon.\n");
    await waitFor(
      async () => (await found("Lisbon")).includes("memory/2025-05-01.md"),
      5000,
      "a new directory and file",
    );

    await write("memory/2025-05-01.md", "Booked the train to Porto.\n");
    await waitFor(async () => (await found("Porto")).length === 1, 5000, "an edit");
    expect(await found("Lisbon")).toEqual([]);

    // Editors save by writing a temporary file and renaming it over the original.
    await writeFile(path.join(workspace, "memory", ".2025-05-01.md.swp"), "Booked the ferry to Madeira.\n");
    await rename(
      path.join(workspace, "memory", ".2025-05-01.md.swp"),
      path.join(workspace, "memory", "2025-05-01.md"),
    );
    await waitFor(async () => (await found("Madeira")).length === 1, 5000, "an atomic replace");
    expect(await found("Porto")).toEqual([]);

    await unlink(path.join(workspace, "MEMORY.md"));
    await waitFor(async () => (await found("hunter2")).length === 0, 5000, "a delete");
    expect((await backend.listFiles()).map((file) => file.path)).toEqual(["memory/2025-05-01.md"]);
  });

  it("embeds what changed in the background after the text is searchable", async () => {
    indexer = createMemoryIndexer({ workspace, backend, embedder: embedder(), chunking, debounceMs: 30 });
    await indexer.sync();
    await indexer.watch();
    await write("MEMORY.md", threeSections("Allergic to peanuts."));
    await waitFor(async () => (await backend.stats()).embeddedChunks === 3, 5000, "the new chunks' vectors");
    await write("MEMORY.md", threeSections("Allergic to walnuts."));
    await waitFor(async () => (await found("walnuts")).length === 1, 5000, "the edit");
    await indexer.whenIdle();
    expect(await backend.stats()).toMatchObject({ chunks: 3, embeddedChunks: 3 });
    expect(embeddedTexts(llm.embeddingRequests())).toHaveLength(4);
  });
});
