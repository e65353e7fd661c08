import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { createRecordingLogger } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../test/test-support.js";
import { type ChunkPreparer, createChunkPreparer } from "./chunk-preparer.js";
import { prepareIndexChunks } from "./prepare-index-chunks.js";

const chunking = { maxTokens: 60, overlapTokens: 10 };

/** Notes of a few kilobytes in English and Chinese, each a little different. */
const notes = Array.from({ length: 30 }, (_, index) => {
  const lines = [`# Day ${index}`, ""];
  for (let line = 0; line < 40; line += 1) {
    lines.push(`- Met Priya about the Apollo launch, ticket OPS-${1000 + index * 40 + line}.`);
    if (line % 7 === 0) lines.push(`- 项目部署脚本数据库迁移会议 ${index}-${line}。`);
    if (line % 13 === 0) lines.push("", `## Section ${line}`, "");
  }
  return {
    path: `memory/2025-01-${String(index + 1).padStart(2, "0")}.md`,
    bytes: Buffer.from(lines.join("\n")),
  };
});

/** A worker that says it is ready (after `readyAfterMs`) and then answers every request by `behaviour`. */
function fakeWorker(behaviour: "exit" | "fail", readyAfterMs = 0): Worker {
  const answer =
    behaviour === "exit" ? "process.exit(3)" : 'parentPort.postMessage({ kind: "failed", id: message.id })';
  return new Worker(
    `const { parentPort } = require("node:worker_threads");
     parentPort.on("message", (message) => { ${answer}; });
     setTimeout(() => parentPort.postMessage({ kind: "ready" }), ${readyAfterMs});`,
    { eval: true },
  );
}

let preparer: ChunkPreparer | undefined;

afterEach(async () => {
  await preparer?.close();
  preparer = undefined;
});

/** Every submitted note's chunks; `termText` (the worker's form of the terms) checked and left out. */
async function prepareAll(using: ChunkPreparer) {
  const jobs = notes.map((note) => using.submit(note.path, note.bytes));
  expect(await using.whenWorkerReady()).toBe(true);
  const prepared = [];
  for (const job of jobs) {
    const chunks = await using.take(job);
    for (const chunk of chunks)
      if (chunk.termText !== undefined) expect(chunk.termText).toBe(chunk.terms.join(" "));
    prepared.push(chunks.map(({ termText: _termText, ...chunk }) => chunk));
  }
  return prepared;
}

const expected = () => notes.map((note) => prepareIndexChunks(note.path, note.bytes, chunking));

/**
 * The modules the index worker loads, from the import statements of its source and of every module it imports
 * (`import type` is erased, so not followed); packages outside the workspace by name.
 */
function workerModules(): Set<string> {
  const loaded = new Set<string>();
  const visit = (file: string): void => {
    if (loaded.has(file)) return;
    loaded.add(file);
    const source = readFileSync(file, "utf8");
    for (const [, specifier] of source.matchAll(
      /^(?:import|export)\s+(?!type\s)[^;]*?from\s+"([^"]+)"/gmsu,
    )) {
      if (specifier!.startsWith("."))
        visit(path.resolve(path.dirname(file), specifier!.replace(/\.js$/u, ".ts")));
      else if (specifier!.startsWith("@almanac/")) visit(createRequire(file).resolve(specifier!));
      else loaded.add(specifier!);
    }
  };
  visit(fileURLToPath(new URL("./index-worker.ts", import.meta.url)));
  return loaded;
}

describe("createChunkPreparer", () => {
  it("prepares a burst of files in the worker thread, with the chunks this thread would make", async () => {
    preparer = createChunkPreparer({ chunking, logger: createRecordingLogger(), workerStartBytes: 1 });
    expect(await prepareAll(preparer)).toEqual(expected());
    expect(preparer.stats().preparedInWorker).toBeGreaterThan(0);
  });

  it("starts a worker that loads the text analysis, neither the token counter nor all of @almanac/core", () => {
    // From the sources each module costs the worker a compile (core's index, zod and every core module: the
    // worker was ready 160-270 ms later under tsx), and the token counter's table is this thread's to load.
    const modules = [...workerModules()];
    const source = fileURLToPath(new URL("./", import.meta.url));
    const core = fileURLToPath(new URL("../../core/src/", import.meta.url));
    expect(modules).toContain(path.join(source, "text-analysis.ts"));
    expect(modules.filter((module) => module.startsWith(core))).toEqual([path.join(core, "errors.ts")]);
    expect(modules).not.toContain(path.join(source, "chunk-markdown.ts"));
    expect(modules).not.toContain("zod");
  });

  it("uses the worker with a custom token counter too: counting and cutting stay on this thread", async () => {
    const counting = { ...chunking, countTokens: (text: string) => Math.ceil(text.length / 3) };
    preparer = createChunkPreparer({
      chunking: counting,
      logger: createRecordingLogger(),
      workerStartBytes: 1,
    });
    const jobs = notes.map((note) => preparer!.submit(note.path, note.bytes));
    expect(await preparer.whenWorkerReady()).toBe(true);
    for (const [index, job] of jobs.entries()) {
      const chunks = (await preparer.take(job)).map(({ termText: _termText, ...chunk }) => chunk);
      expect(chunks).toEqual(prepareIndexChunks(notes[index]!.path, notes[index]!.bytes, counting));
    }
    expect(preparer.stats().preparedInWorker).toBeGreaterThan(0);
  });

  it("cuts the queued files while the worker starts, analysing only the one it waits for", async () => {
    const cut = new Set<string>();
    const counting = {
      ...chunking,
      countTokens: (text: string) => {
        if (text.startsWith("# Day ")) cut.add(text);
        return Math.ceil(text.length / 4);
      },
    };
    preparer = createChunkPreparer({
      chunking: counting,
      logger: createRecordingLogger(),
      workerStartBytes: 1,
      startWorker: () => fakeWorker("fail", 2000),
    });
    const jobs = notes.map((note) => preparer!.submit(note.path, note.bytes));
    await preparer.take(jobs[0]!);
    expect(cut.size).toBe(notes.length);
    expect(preparer.stats()).toEqual({ preparedHere: 1, preparedInWorker: 0 });
    for (const job of jobs.slice(1)) preparer.discard(job);
  });

  it("keeps a single small file on this thread, without starting the worker", async () => {
    let started = 0;
    preparer = createChunkPreparer({
      chunking,
      logger: createRecordingLogger(),
      workerStartBytes: 64 * 1024,
      startWorker: () => {
        started += 1;
        return fakeWorker("fail");
      },
    });
    const [note] = notes;
    expect(await preparer.take(preparer.submit(note!.path, note!.bytes))).toEqual(expected()[0]);
    expect(started).toBe(0);
    expect(preparer.stats()).toEqual({ preparedHere: 1, preparedInWorker: 0 });
  });

  it("prepares here what a dying worker held, logs it once and does not start another", async () => {
    const logger = createRecordingLogger();
    let started = 0;
    preparer = createChunkPreparer({
      chunking,
      logger,
      workerStartBytes: 1,
      startWorker: () => {
        started += 1;
        return fakeWorker("exit");
      },
    });
    expect(await prepareAll(preparer)).toEqual(expected());
    const again = preparer.submit(notes[1]!.path, notes[1]!.bytes);
    expect(await preparer.take(again)).toEqual(expected()[1]);
    expect(started).toBe(1);
    expect(preparer.stats().preparedInWorker).toBe(0);
    expect(logger.entries.filter((entry) => entry.level === "warn")).toHaveLength(1);
  });

  it("prepares again here a file the worker failed on, so the result or the error is this thread's", async () => {
    preparer = createChunkPreparer({
      chunking,
      logger: createRecordingLogger(),
      workerStartBytes: 1,
      startWorker: () => fakeWorker("fail"),
    });
    expect(await prepareAll(preparer)).toEqual(expected());

    // The real worker, with options chunkMarkdown refuses: cutting the files fails on this thread, which throws.
    const invalid = { maxTokens: 1.5 };
    const refused = createChunkPreparer({
      chunking: invalid,
      logger: createRecordingLogger(),
      workerStartBytes: 1,
    });
    try {
      const jobs = notes.map((note) => refused.submit(note.path, note.bytes));
      expect(await refused.whenWorkerReady()).toBe(true);
      const thrown = () => prepareIndexChunks(notes[0]!.path, notes[0]!.bytes, invalid);
      expect(thrown).toThrow(RangeError);
      for (const job of jobs)
        await expect(refused.take(job)).rejects.toThrow(/maxTokens must be a whole number/);
      expect(refused.stats().preparedInWorker).toBe(0);
    } finally {
      await refused.close();
    }
  });

  it("stops the worker once idle, and starts it again for the next burst", async () => {
    preparer = createChunkPreparer({
      chunking,
      logger: createRecordingLogger(),
      workerStartBytes: 1,
      idleMs: 20,
    });
    await prepareAll(preparer);
    await waitFor(async () => !(await preparer!.whenWorkerReady()), 5000, "the idle worker to stop");
    expect(await prepareAll(preparer)).toEqual(expected());
  });

  it("does not keep the process alive once the files are taken", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "almanac-preparer-"));
    try {
      const module = fileURLToPath(new URL("./chunk-preparer.ts", import.meta.url));
      const script = path.join(directory, "script.mts");
      await writeFile(
        script,
        `import { createChunkPreparer } from ${JSON.stringify(module)};
         const logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => logger };
         const preparer = createChunkPreparer({ logger, workerStartBytes: 1, idleMs: 60_000 });
         const jobs = Array.from({ length: 20 }, (_, index) => preparer.submit(\`memory/\${index}.md\`, Buffer.from("# Note\\n\\nApollo launch. 项目。\\n".repeat(50))));
         const ready = await preparer.whenWorkerReady();
         let chunks = 0;
         for (const job of jobs) chunks += (await preparer.take(job)).length;
         console.log(JSON.stringify({ ready, chunks, inWorker: preparer.stats().preparedInWorker > 0 }));
         // Not closed: the worker's idle timer and the worker itself must not hold the process.`,
      );
      const repoRoot = fileURLToPath(new URL("../../..", import.meta.url));
      const run = spawnSync(process.execPath, ["--import", "tsx", script], {
        cwd: repoRoot,
        encoding: "utf8",
        timeout: 20_000,
      });
      expect(run.status, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toEqual({ ready: true, chunks: expect.any(Number), inWorker: true });
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 30_000);
});
