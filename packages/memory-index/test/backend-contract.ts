import type { Embedder } from "@almanac/core";
import { deterministicEmbedding } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chunkMarkdown } from "../src/chunk-markdown.js";
import { searchableText } from "../src/hybrid-score.js";
import { createMemorySearch } from "../src/memory-search.js";
import { memorySource } from "../src/memory-source.js";
import { analyzeText } from "../src/text-analysis.js";
import type { IndexChunk, IndexedFile, MemoryIndexBackend } from "../src/types.js";

// The shared contract every MemoryIndexBackend passes (STYLE: contract suites). Imported by the
// backends' test files only; it registers Vitest tests and is never part of production code.

/** Opens backends over one store; a second `open` is a restart. */
export interface BackendHarness {
  open(options: { readonly dimensions: number }): Promise<MemoryIndexBackend>;
  /** Removes the store (files, collection). */
  dispose(): Promise<void>;
}

const dimensions = 16;

/** Chunks of a Markdown text with their analysed terms, as the indexer would store them. */
export function indexChunks(path: string, markdown: string): IndexChunk[] {
  return chunkMarkdown(path, markdown).map((chunk) => ({
    ...chunk,
    terms: analyzeText(searchableText(chunk)),
  }));
}

/** File state for a test upsert. */
export function fileFor(path: string, content: string, mtimeMs = 1_700_000_000_000): IndexedFile {
  return {
    path,
    hash: `hash-of-${content.length}-${path}`,
    mtimeMs,
    size: content.length,
    source: memorySource(path),
  };
}

/** An embedder for contract tests: fixed vectors for some texts, the testkit's hashed-word vectors otherwise. */
export function createTableEmbedder(table: ReadonlyMap<string, readonly number[]> = new Map()): Embedder {
  return {
    modelName: "table-embedder",
    dimensions,
    embed: async (texts) =>
      texts.map((text) => [...(table.get(text) ?? deterministicEmbedding(text, dimensions))]),
  };
}

function unit(index: number): number[] {
  return Array.from({ length: dimensions }, (_, position) => (position === index ? 1 : 0));
}

async function put(
  backend: MemoryIndexBackend,
  path: string,
  markdown: string,
  vectors?: readonly number[][],
) {
  const chunks = indexChunks(path, markdown);
  await backend.upsertFile(
    fileFor(path, markdown),
    chunks,
    vectors === undefined ? undefined : { model: "table-embedder", vectors },
  );
  return chunks;
}

/** Registers the backend contract tests under `name`; `skip` turns the whole suite into a visible skip. */
export function describeBackendContract(
  name: string,
  createHarness: () => Promise<BackendHarness>,
  options: { readonly skip?: boolean } = {},
): void {
  describe.skipIf(options.skip === true)(name, () => {
    let harness: BackendHarness;
    let backend: MemoryIndexBackend;

    beforeEach(async () => {
      harness = await createHarness();
      backend = await harness.open({ dimensions });
    });

    afterEach(async () => {
      await backend.close();
      await harness.dispose();
    });

    it("finds upserted chunks by their words and remembers the file", async () => {
      const markdown = "# Apollo\n\nThe Apollo launch moved to the ninth of May.\n";
      await put(backend, "memory/projects.md", markdown);
      const hits = await backend.search({ terms: ["launch"], limit: 10 });
      expect(hits.map((hit) => hit.chunk.path)).toEqual(["memory/projects.md"]);
      expect(hits[0]!.chunk).toMatchObject({ startLine: 1, endLine: 3, source: "notes", headings: [] });
      expect(await backend.fileState("memory/projects.md")).toEqual(fileFor("memory/projects.md", markdown));
      expect((await backend.listFiles()).map((file) => file.path)).toEqual(["memory/projects.md"]);
      expect(await backend.stats()).toMatchObject({ files: 1, chunks: 1, embeddedChunks: 0 });
    });

    it("keeps a search within its memory scope's paths, text and vectors alike, before the limit", async () => {
      const group = "shared/discord-default-group-42/";
      for (let index = 0; index < 6; index += 1)
        await put(backend, `memory/n${index}.md`, `Kestrel owner note ${index}.\n`, [unit(3)]);
      await put(backend, `${group}2025-01-02.md`, "Kestrel group note.\n", [unit(3)]);
      await put(backend, "shared/discord-default-group-43/2025-01-02.md", "Kestrel other group.\n", [
        unit(3),
      ]);
      const inGroup = await backend.search({
        terms: ["kestrel"],
        vector: unit(3),
        limit: 2,
        paths: { prefix: group },
      });
      expect(inGroup.map((hit) => hit.chunk.path)).toEqual([`${group}2025-01-02.md`]);
      const owner = await backend.search({
        terms: ["kestrel"],
        limit: 20,
        paths: { excludePrefix: "shared/" },
      });
      expect(owner).toHaveLength(6);
      expect(owner.every((hit) => hit.chunk.path.startsWith("memory/"))).toBe(true);
    });

    it("replaces a file's chunks when the file is upserted again", async () => {
      await put(backend, "MEMORY.md", "Favourite colour: teal.\n");
      await put(backend, "MEMORY.md", "Favourite colour: orange.\n");
      expect(await backend.search({ terms: ["teal"], limit: 10 })).toEqual([]);
      expect((await backend.search({ terms: ["orange"], limit: 10 })).map((hit) => hit.chunk.text)).toEqual([
        "Favourite colour: orange.",
      ]);
      expect(await backend.stats()).toMatchObject({ files: 1, chunks: 1 });
    });

    it("writes several files in one upsertFiles, replacing each file's earlier chunks", async () => {
      await put(backend, "memory/a.md", "Heron old note.\n");
      const files = [
        ["memory/a.md", "Heron new note.\n"],
        ["memory/b.md", "Heron second note.\n"],
        ["MEMORY.md", "Heron in long-term memory.\n"],
      ] as const;
      await backend.upsertFiles(
        files.map(([path, markdown]) => ({
          file: fileFor(path, markdown),
          chunks: indexChunks(path, markdown),
        })),
      );
      const texts = (await backend.search({ terms: ["heron"], limit: 10 })).map((hit) => hit.chunk.text);
      expect(texts.sort()).toEqual(["Heron in long-term memory.", "Heron new note.", "Heron second note."]);
      expect((await backend.listFiles()).map((file) => file.path)).toEqual([
        "MEMORY.md",
        "memory/a.md",
        "memory/b.md",
      ]);
      expect(await backend.stats()).toMatchObject({ files: 3, chunks: 3 });
    });

    it("deletes a file with its chunks, leaving other files alone", async () => {
      await put(backend, "memory/a.md", "Walrus facts.\n");
      await put(backend, "memory/b.md", "Walrus trivia.\n");
      await backend.deleteFile("memory/a.md");
      expect((await backend.search({ terms: ["walrus"], limit: 10 })).map((hit) => hit.chunk.path)).toEqual([
        "memory/b.md",
      ]);
      expect(await backend.fileState("memory/a.md")).toBeUndefined();
      expect(await backend.stats()).toMatchObject({ files: 1, chunks: 1 });
    });

    it("returns text and vector candidates together and hybrid search ranks both", async () => {
      await put(backend, "memory/text.md", "Zebra migration happens in July.\n", [unit(1)]);
      await put(backend, "memory/vector.md", "Striped grazers cross the river.\n", [unit(0)]);
      await put(backend, "memory/noise.md", "Quarterly budget review.\n", [unit(2)]);
      const hits = await backend.search({ terms: ["zebra"], vector: unit(0), limit: 2 });
      const byPath = new Map(hits.map((hit) => [hit.chunk.path, hit]));
      expect(byPath.get("memory/vector.md")?.vectorSimilarity).toBeCloseTo(1, 5);
      expect(byPath.get("memory/text.md")?.vectorSimilarity).toBeCloseTo(0, 5);

      const search = createMemorySearch({
        backend,
        embedder: createTableEmbedder(new Map([["zebra", unit(0)]])),
      });
      const response = await search.search("zebra", { minScore: 0 });
      expect(response.mode).toBe("hybrid");
      expect(response.results.slice(0, 2).map((result) => result.path)).toEqual([
        "memory/vector.md",
        "memory/text.md",
      ]);
      expect(response.results[0]!.score).toBeGreaterThan(response.results[1]!.score);
    });

    it("keeps an exact keyword hit even when its score is under minScore", async () => {
      await put(backend, "memory/text.md", "Zebra migration happens in July.\n", [unit(1)]);
      await put(backend, "memory/vector.md", "Striped grazers cross the river.\n", [unit(0)]);
      const search = createMemorySearch({
        backend,
        embedder: createTableEmbedder(new Map([["zebra", unit(0)]])),
      });
      const response = await search.search("zebra", { minScore: 0.95 });
      expect(response.results.map((result) => result.path)).toEqual(["memory/text.md"]);
      expect(response.results[0]!.score).toBeLessThan(0.95);
    });

    it("finds Chinese notes by a two-character word", async () => {
      await put(backend, "memory/plan.md", "我们决定下个月开始新项目的设计评审。\n");
      await put(backend, "memory/weather.md", "今天的天气很好，适合出去散步。\n");
      const search = createMemorySearch({ backend });
      const response = await search.search("项目");
      expect(response.mode).toBe("text");
      expect(response.results.map((result) => result.path)).toEqual(["memory/plan.md"]);
    });

    it("refuses vectors of another size with index.dimensions_mismatch", async () => {
      await put(backend, "memory/a.md", "Walrus facts.\n", [unit(0)]);
      await backend.close();
      backend = await harness.open({ dimensions });
      const attempt = async () => {
        const other = await harness.open({ dimensions: dimensions * 2 });
        try {
          await other.upsertFile(fileFor("memory/b.md", "x"), indexChunks("memory/b.md", "Otter facts.\n"), {
            model: "table-embedder",
            vectors: [Array.from({ length: dimensions * 2 }, () => 0.1)],
          });
        } finally {
          await other.close();
        }
      };
      await expect(attempt()).rejects.toMatchObject({ code: "index.dimensions_mismatch" });
      await expect(put(backend, "memory/c.md", "Seal facts.\n", [[1, 2, 3]])).rejects.toMatchObject({
        code: "index.dimensions_mismatch",
      });
    });

    it("reopens without duplicating chunks", async () => {
      const markdown = "# Log\n\nDeployed OPS-4821 to staging.\n";
      await put(backend, "memory/2025-01-02.md", markdown, [unit(3)]);
      await backend.close();
      backend = await harness.open({ dimensions });
      await put(backend, "memory/2025-01-02.md", markdown, [unit(3)]);
      expect(await backend.stats()).toMatchObject({ files: 1, chunks: 1, embeddedChunks: 1, dimensions });
      const hits = await backend.search({ terms: ["ops-4821"], vector: unit(3), limit: 10 });
      expect(hits).toHaveLength(1);
      expect(hits[0]!.chunk.source).toBe("daily");
    });

    it("caches vectors by model and content hash and fills pending chunks later", async () => {
      const [chunk] = await put(backend, "memory/a.md", "Narwhal facts.\n");
      expect((await backend.pendingChunks(10)).map((pending) => pending.id)).toEqual([chunk!.id]);
      await backend.setVectors("table-embedder", [
        { chunkId: chunk!.id, hash: chunk!.hash, vector: unit(4) },
      ]);
      expect(await backend.pendingChunks(10)).toEqual([]);
      expect(await backend.stats()).toMatchObject({ embeddedChunks: 1, vectorModel: "table-embedder" });
      const cached = await backend.cachedVectors("table-embedder", [chunk!.hash, "unknown"]);
      expect([...cached.keys()]).toEqual([chunk!.hash]);
      expect(cached.get(chunk!.hash)![4]).toBeCloseTo(1, 5);
      expect((await backend.cachedVectors("other-model", [chunk!.hash])).size).toBe(0);
      await backend.clearVectors();
      expect(await backend.stats()).toMatchObject({ chunks: 1, embeddedChunks: 0 });
      expect(await backend.pendingChunks(10)).toHaveLength(1);
    });

    it("clears everything on request", async () => {
      await put(backend, "memory/a.md", "Narwhal facts.\n");
      await backend.clear();
      expect(await backend.stats()).toMatchObject({ files: 0, chunks: 0 });
      expect(await backend.listFiles()).toEqual([]);
      expect(await backend.search({ terms: ["narwhal"], limit: 10 })).toEqual([]);
    });
  });
}
