/**
 * Memory index and search benchmarks (not part of the test run):
 *  1. indexing throughput (chunks/s) through the indexer, full-text only and with the test kit's
 *     local scripted embedder;
 *  2. `memory_search` latency p50/p95, full-text only, at 10k and 100k chunks;
 *  3. file-save-to-searchable latency p50/p95 with the watcher.
 * Run: npx tsx bench/search.ts            (add --quick to skip the 100k build; --index-only runs
 *      the full-text indexing row alone, for profiling with `node --cpu-prof --import tsx`; --year runs
 *      the rows on the year corpus (bench/year-corpus.ts) alone: indexing it in-process, text only, and the
 *      search median of per-query medians, with the backend's chunk cache and without; --json <file> writes
 *      the figures, bench/figures.ts)
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { createOpenAIEmbedder } from "@almanac/llm";
import {
  analyzeText,
  chunkMarkdown,
  createMemoryIndexer,
  createMemorySearch,
  createSqliteIndex,
  type IndexChunk,
  type MemoryIndexBackend,
  searchableText,
} from "@almanac/memory-index";
import { startScriptedLlm } from "@almanac/testkit";
import { Figures, jsonOption } from "./figures.js";
import { median, percentile } from "./sample-stats.js";
import { writeYearCorpus, yearQueries } from "./year-corpus.js";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "index-only": { type: "boolean", default: false },
    year: { type: "boolean", default: false },
    ...jsonOption,
  },
});
const { quick, year } = values;
const indexOnly = values["index-only"];
const figures = new Figures(values.json);

// ---- Synthetic notes: Zipf-distributed pseudo-words, ticket ids, some Chinese -------------------

function createRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = createRandom(42);
const syllables = "ka lo mi ren sta por vel dun tri sha mo ber gan lis tor pen vo rak sel dim".split(" ");
const vocabulary = Array.from({ length: 20_000 }, (_, rank) => {
  let word = "";
  let value = rank + 7;
  do {
    word += syllables[value % syllables.length];
    value = Math.floor(value / syllables.length);
  } while (value > 0);
  return word;
});
const stopWords = "the a to of and in is for on with that we it was at by".split(" ");
const hanPool =
  "项目部署脚本数据库迁移会议客户设计评审上线时间预算计划报告团队测试服务器网络安全用户需求文档接口性能".split(
    "",
  );
const cumulative = (() => {
  const weights = vocabulary.map((_, rank) => 1 / (rank + 1));
  let sum = 0;
  return weights.map((weight) => (sum += weight));
})();

function zipfWord(): string {
  const target = random() * cumulative.at(-1)!;
  let low = 0;
  let high = cumulative.length - 1;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (cumulative[middle]! < target) low = middle + 1;
    else high = middle;
  }
  return vocabulary[low]!;
}

const hanWord = () =>
  hanPool[Math.floor(random() * hanPool.length)]! + hanPool[Math.floor(random() * hanPool.length)]!;
const ticket = () => `OPS-${1000 + Math.floor(random() * 9000)}`;

function sentence(): string {
  const words: string[] = [];
  const length = 8 + Math.floor(random() * 12);
  for (let index = 0; index < length; index += 1) {
    const roll = random();
    words.push(
      roll < 0.35 ? stopWords[Math.floor(random() * stopWords.length)]! : roll < 0.37 ? ticket() : zipfWord(),
    );
  }
  const text = `${words.join(" ")}.`;
  return random() < 0.2 ? `${text} ${Array.from({ length: 6 }, hanWord).join("")}。` : text;
}

/** A note of about `sentences` sentences, with a heading every few lines (a 400-token chunk is ~25 sentences). */
function note(title: string, sentences: number): string {
  const lines = [`# ${title}`, ""];
  for (let index = 0; index < sentences; index += 1) {
    if (index > 0 && index % 12 === 0) lines.push("", `## ${zipfWord()} ${zipfWord()}`, "");
    lines.push(`- ${sentence()}`);
  }
  return `${lines.join("\n")}\n`;
}

const ms = (value: number) => `${value.toFixed(2)} ms`;

// ---- 1. Indexing throughput --------------------------------------------------------------------

async function writeWorkspace(workspace: string, files: number, sentences: number): Promise<void> {
  await mkdir(path.join(workspace, "memory"), { recursive: true });
  for (let index = 0; index < files; index += 1) {
    const day = new Date(Date.UTC(2024, 0, 1) + index * 86_400_000).toISOString().slice(0, 10);
    await writeFile(path.join(workspace, "memory", `${day}.md`), note(`Log ${day}`, sentences));
  }
}

async function throughput(directory: string): Promise<void> {
  const workspace = path.join(directory, "throughput");
  await writeWorkspace(workspace, quick ? 100 : 400, 60);
  const llm = await startScriptedLlm({ embeddingDimensions: 256 });
  try {
    for (const withEmbedder of indexOnly ? [false] : [false, true]) {
      const backend = createSqliteIndex({ path: path.join(directory, `throughput-${withEmbedder}.sqlite`) });
      const embedder = withEmbedder
        ? createOpenAIEmbedder({
            baseURL: llm.baseURL,
            apiKey: "",
            model: "scripted-embedding",
            maxRetries: 0,
          })
        : undefined;
      const indexer = createMemoryIndexer({
        workspace,
        backend,
        ...(embedder === undefined ? {} : { embedder }),
      });
      const from = process.hrtime.bigint() / 1000n;
      const started = performance.now();
      const report = await indexer.sync();
      const seconds = (performance.now() - started) / 1000;
      // The monotonic clock (µs) a `--cpu-prof` stamps its samples with: bench/cpu-profile.ts --from/--to.
      if (indexOnly) console.error(`sync: monotonic µs ${from}–${process.hrtime.bigint() / 1000n}`);
      const label = withEmbedder ? "with local scripted embedder (256-d)" : "full-text only";
      console.log(
        `| index ${label} | ${report.filesIndexed} files, ${report.chunksIndexed} chunks | ${(report.chunksIndexed / seconds).toFixed(0)} chunks/s | ${seconds.toFixed(1)} s |`,
      );
      figures.add(
        `index-${withEmbedder ? "with-embedder" : "full-text"}-${report.filesIndexed}-files`,
        report.chunksIndexed / seconds,
        "chunks/s",
      );
      await indexer.close();
      await backend.close();
    }
  } finally {
    await llm.close();
  }
}

// ---- 2. Search latency at 10k / 100k chunks ---------------------------------------------------

/** Fills a backend with synthetic ~400-token chunks directly (10 per file), skipping the token counter. */
async function fill(backend: MemoryIndexBackend, chunks: number): Promise<void> {
  const perFile = 10;
  const started = performance.now();
  for (let file = 0; file < chunks / perFile; file += 1) {
    const filePath = `memory/synthetic/${String(file).padStart(6, "0")}.md`;
    const indexChunks: IndexChunk[] = [];
    for (let index = 0; index < perFile; index += 1) {
      const text = Array.from({ length: 20 }, () => `- ${sentence()}`).join("\n");
      const line = index * 20 + 1;
      const [chunk] = chunkMarkdown(filePath, text, {
        maxTokens: 100_000,
        countTokens: (value) => value.length / 4,
      });
      if (chunk === undefined) continue;
      const placed = { ...chunk, id: `${filePath}:${line}`, startLine: line, endLine: line + 19 };
      indexChunks.push({ ...placed, terms: analyzeText(searchableText(placed)) });
    }
    await backend.upsertFile(
      { path: filePath, hash: String(file), mtimeMs: Date.now(), size: 0, source: "notes" },
      indexChunks,
    );
    if (file > 0 && file % 2000 === 0) {
      const rate = (file * perFile) / ((performance.now() - started) / 1000);
      console.error(`  … ${file * perFile} chunks (${rate.toFixed(0)} chunks/s)`);
    }
  }
}

function queries(count: number): string[] {
  return Array.from({ length: count }, (_, index) => {
    switch (index % 5) {
      case 0:
        return `${zipfWord()} ${zipfWord()}`;
      case 1:
        return `what did we decide about the ${zipfWord()} ${zipfWord()} ${zipfWord()}`;
      case 2:
        return `${ticket()} ${zipfWord()}`;
      case 3:
        return `${hanWord()}${hanWord()}`;
      default:
        return vocabulary[Math.floor(random() * 200)]!;
    }
  });
}

async function latency(directory: string, chunks: number): Promise<void> {
  const backend = createSqliteIndex({ path: path.join(directory, `latency-${chunks}.sqlite`) });
  const built = performance.now();
  await fill(backend, chunks);
  const buildSeconds = (performance.now() - built) / 1000;
  const search = createMemorySearch({ backend });
  for (const query of queries(50)) await search.search(query); // warm-up
  const timings: number[] = [];
  for (const query of queries(500)) {
    const started = performance.now();
    await search.search(query);
    timings.push(performance.now() - started);
  }
  console.log(
    `| memory_search, full-text, ${chunks / 1000}k chunks | p50 ${ms(percentile(timings, 50))} | p95 ${ms(percentile(timings, 95))} | build ${buildSeconds.toFixed(0)} s |`,
  );
  figures.add(`search-${chunks / 1000}k-p50`, percentile(timings, 50), "ms");
  figures.add(
    `search-${chunks / 1000}k-p95`,
    percentile(timings, 95),
    "ms",
    chunks === 100_000 ? { below: 10 } : undefined,
  );
  await backend.close();
}

// ---- 3. Save-to-searchable with the watcher ---------------------------------------------------

async function saveToSearchable(directory: string): Promise<void> {
  const workspace = path.join(directory, "watch");
  await writeWorkspace(workspace, 50, 40);
  const backend = createSqliteIndex({ path: path.join(directory, "watch.sqlite") });
  const indexer = createMemoryIndexer({ workspace, backend });
  await indexer.sync();
  await indexer.watch();
  const search = createMemorySearch({ backend });
  const timings: number[] = [];
  for (let round = 0; round < 40; round += 1) {
    const marker = `marker${round}x${Math.floor(random() * 1e9)}`;
    const started = performance.now();
    await writeFile(
      path.join(workspace, "memory", `watched-${round % 5}.md`),
      `${note("Watched", 20)}\n- ${marker}\n`,
    );
    for (;;) {
      const { results } = await search.search(marker);
      if (results.length > 0) break;
      if (performance.now() - started > 10_000) throw new Error(`"${marker}" not searchable after 10 s`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    timings.push(performance.now() - started);
    await indexer.whenIdle();
  }
  console.log(
    `| save → searchable (watcher, 150 ms debounce) | p50 ${ms(percentile(timings, 50))} | p95 ${ms(percentile(timings, 95))} | 40 saves |`,
  );
  figures.add("save-to-searchable-p50", percentile(timings, 50), "ms");
  figures.add("save-to-searchable-p95", percentile(timings, 95), "ms", { below: 250 });
  await indexer.close();
  await backend.close();
}

// ---- 4. The year corpus (bench/year-corpus.ts): indexing in-process and per-query search medians -----

async function yearRows(directory: string): Promise<void> {
  const workspace = path.join(directory, "year");
  await writeYearCorpus(workspace);
  const backend = createSqliteIndex({ path: path.join(directory, "year.sqlite") });
  const indexer = createMemoryIndexer({ workspace, backend });
  const started = performance.now();
  const report = await indexer.sync();
  const seconds = (performance.now() - started) / 1000;
  console.log(
    `| index the year corpus in-process, text only (tokenizer table loaded inside) | ${report.filesIndexed} files, ${report.chunksIndexed} chunks | ${(report.chunksIndexed / seconds).toFixed(0)} chunks/s | ${seconds.toFixed(2)} s |`,
  );
  figures.add("year-index-time", seconds, "s", { below: 0.4 });
  figures.add("year-index-rate", report.chunksIndexed / seconds, "chunks/s");
  // Again into a fresh index in the same process: the tokenizer table and the counting caches are warm.
  const again = createSqliteIndex({ path: path.join(directory, "year-again.sqlite") });
  const warmIndexer = createMemoryIndexer({ workspace, backend: again });
  const warmStarted = performance.now();
  const warm = await warmIndexer.sync();
  const warmSeconds = (performance.now() - warmStarted) / 1000;
  console.log(
    `| the same again, same process (tokenizer loaded, caches warm) | ${warm.chunksIndexed} chunks | ${(warm.chunksIndexed / warmSeconds).toFixed(0)} chunks/s | ${warmSeconds.toFixed(2)} s |`,
  );
  figures.add("year-index-warm-time", warmSeconds, "s");
  await warmIndexer.close();
  await again.close();

  const search = createMemorySearch({ backend });
  const medians = await perQueryMedians(search);
  console.log(
    `| memory_search on the year corpus, median of per-query medians (${yearQueries.length} queries × 200) | ${ms(median(medians))} | slowest query ${ms(Math.max(...medians))} | |`,
  );
  figures.add("year-search-median", median(medians), "ms", { below: 0.4 });
  // Each query repeats 200 times, so the row above reads its candidates from the backend's chunk cache: this
  // one reads every candidate from SQLite again, as a query whose candidates no search read before does.
  const uncached = createSqliteIndex({ path: path.join(directory, "year.sqlite"), chunkCacheCharacters: 0 });
  const uncachedMedians = await perQueryMedians(createMemorySearch({ backend: uncached }), "uncached search");
  console.log(
    `| the same, chunk cache off (every candidate read and normalised anew) | ${ms(median(uncachedMedians))} | slowest query ${ms(Math.max(...uncachedMedians))} | |`,
  );
  figures.add("year-search-uncached-median", median(uncachedMedians), "ms");
  await uncached.close();
  await indexer.close();
  await backend.close();
}

/** Each year query 20 times to warm up, then 200 times timed: the median per query. */
async function perQueryMedians(
  search: ReturnType<typeof createMemorySearch>,
  label = "search",
): Promise<number[]> {
  for (const query of yearQueries) for (let round = 0; round < 20; round += 1) await search.search(query);
  const medians: number[] = [];
  const from = process.hrtime.bigint() / 1000n;
  for (const query of yearQueries) {
    const timings: number[] = [];
    for (let round = 0; round < 200; round += 1) {
      const begin = performance.now();
      await search.search(query);
      timings.push(performance.now() - begin);
    }
    medians.push(median(timings));
  }
  // The monotonic clock (µs) a `--cpu-prof` stamps its samples with: bench/cpu-profile.ts --from/--to.
  console.error(`${label}: monotonic µs ${from}–${process.hrtime.bigint() / 1000n}`);
  return medians;
}

const directory = await mkdtemp(path.join(tmpdir(), "almanac-search-bench-"));
try {
  console.log(`Node ${process.version}, ${new Date().toISOString().slice(0, 10)}\n`);
  console.log("| measure | | | |");
  console.log("|---|---|---|---|");
  if (year) await yearRows(directory);
  else await throughput(directory);
  if (!indexOnly && !year) {
    await latency(directory, 10_000);
    if (!quick) await latency(directory, 100_000);
    await saveToSearchable(directory);
  }
  figures.write();
} finally {
  await rm(directory, { recursive: true, force: true });
}
