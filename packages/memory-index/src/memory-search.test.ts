import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import type { Embedder } from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTableEmbedder, fileFor, indexChunks } from "../test/backend-contract.js";
import { createMemorySearch } from "./memory-search.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

let directory: string;
let backend: MemoryIndexBackend;

async function put(files: Record<string, string>, embedder?: Embedder): Promise<void> {
  for (const [file, text] of Object.entries(files)) {
    const chunks = indexChunks(file, text);
    const vectors =
      embedder === undefined ? undefined : await embedder.embed(chunks.map((chunk) => chunk.text));
    await backend.upsertFile(fileFor(file, text), chunks, vectors && { model: embedder!.modelName, vectors });
  }
}

beforeEach(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "almanac-search-"));
  backend = createSqliteIndex({ path: path.join(directory, "memory.sqlite") });
});

afterEach(async () => {
  await backend.close();
  await rm(directory, { recursive: true, force: true });
});

describe("createMemorySearch", () => {
  it("puts the note holding an exact identifier first, above notes that match the other words better", async () => {
    const noise = Object.fromEntries(
      Array.from({ length: 8 }, (_, index) => [
        `memory/ops-${index}.md`,
        `Ops review ${index}: the database failover drill, failover timings, more failover notes.`,
      ]),
    );
    await put({ ...noise, "memory/tickets.md": "Closed OPS-4821 after the fix." });
    const { results } = await createMemorySearch({ backend }).search("OPS-4821 database failover", {
      minScore: 0,
    });
    expect(results[0]!.path).toBe("memory/tickets.md");
    expect(results[0]!.score).toBeGreaterThan(results[1]!.score);
  });

  it("applies maxResults and minScore, and scores keep their spread", async () => {
    await put({
      "memory/a.md": "Apollo launch date moved to May; launch risks reviewed.",
      "memory/b.md": "Apollo retrospective.",
      "memory/c.md": "Launch of the new bakery.",
      "memory/d.md": "Unrelated gardening notes.",
      "memory/e.md": "Rocket launch webcast.",
    });
    const search = createMemorySearch({ backend });
    const all = await search.search("apollo launch risks", { minScore: 0 });
    expect(all.results.map((result) => result.path).slice(0, 2)).toEqual(["memory/a.md", "memory/b.md"]);
    expect(all.results.map((result) => result.path).sort()).toEqual([
      "memory/a.md",
      "memory/b.md",
      "memory/c.md",
      "memory/e.md",
    ]);
    expect(new Set(all.results.map((result) => result.score)).size).toBeGreaterThanOrEqual(3);
    expect((await search.search("apollo launch risks", { maxResults: 1 })).results).toHaveLength(1);
    const floor = all.results[1]!.score + 0.001;
    expect(
      (await search.search("apollo launch risks", { minScore: floor })).results.map((r) => r.path),
    ).toEqual(["memory/a.md"]);
  });

  it("lets an old clear match outrank a weak recent one, and recency break near-ties", async () => {
    await put({
      "memory/2021-03-01.md": "Passport renewal: form HM-55 sent, photos at the post office, fee paid.",
      "memory/2025-05-30.md": "Passport.",
      "memory/2024-01-10.md": "Passport renewal: form HM-55 sent, photos at the post office, fee paid.",
    });
    const search = createMemorySearch({ backend, clock: () => Date.UTC(2025, 5, 1) });
    const { results } = await search.search("passport renewal photos fee", { minScore: 0 });
    expect(results.map((result) => result.path)).toEqual([
      "memory/2024-01-10.md",
      "memory/2021-03-01.md",
      "memory/2025-05-30.md",
    ]);
    expect(results.map((result) => result.source)).toEqual(["daily", "daily", "daily"]);
  });

  it("shows the lines around the match when a chunk is longer than a snippet", async () => {
    const lines = Array.from(
      { length: 30 },
      (_, index) => `Line ${index} talks about gardening and compost.`,
    );
    lines[20] = "The spare key is under the blue flowerpot.";
    await put({ "MEMORY.md": lines.join("\n") });
    const [result] = (await createMemorySearch({ backend, snippetChars: 120 }).search("spare key")).results;
    expect(result!.snippet).toMatch(/^…\nThe spare key is under the blue flowerpot\./u);
    expect(result!.snippet.length).toBeLessThanOrEqual(124);
    expect(result).toMatchObject({ path: "MEMORY.md", startLine: 1, source: "memory", mode: "text" });
  });

  it("shows the line holding an exact identifier even when every line of a long chunk shares the other words", async () => {
    // The reported failure: a 20-line daily log in one chunk, every line a "FACT-K<n>" of the same two speakers;
    // the snippet used to start at the first line holding any query word, so FACT-K16 was cut off.
    const lines = ["# 2026-11-30", "", "## Session — 14:05"];
    for (let index = 1; index <= 20; index += 1) {
      lines.push(
        `- Alice Example: remember FACT-K${index}: the staging deploy window number ${index} is on a weekday after lunch, confirmed with Bob Example.`,
      );
    }
    await put({ "memory/2026-11-30.md": lines.join("\n") });
    const search = createMemorySearch({ backend, snippetChars: 700 });
    for (const wanted of [16, 20, 3]) {
      const [hit] = (await search.search(`FACT-K${wanted}`)).results;
      expect(hit!.snippet).toContain(`FACT-K${wanted}:`);
      const factLine = lines.findIndex((line) => line.includes(`FACT-K${wanted}:`)) + 1;
      expect(hit!.startLine).toBeLessThanOrEqual(factLine);
      expect(hit!.endLine).toBeGreaterThanOrEqual(factLine);
      // Reading the hit's range gives back every line the snippet shows.
      const read = lines.slice(hit!.startLine - 1, hit!.endLine).join("\n");
      expect(read).toContain(hit!.snippet.replace(/^…\n|\n…$/gu, ""));
      expect(hit!.snippet.length).toBeLessThanOrEqual(704);
    }
  });

  it("returns a passage that shares only one word with the question, however low it scores", async () => {
    const filler = Array.from({ length: 8 }, (_, index) => [
      `memory/2025-01-0${index + 1}.md`,
      `Groceries ${index}: oat milk, lentils, rice, apples and a loaf of rye bread.`,
    ]);
    const answer =
      "The kiln at the community hall fires on Thursdays, and the teacher says the bowls are finally " +
      "symmetrical after six weeks of trying; they can be picked up at the weekend.";
    await put({ ...Object.fromEntries(filler), "memory/2025-02-01.md": answer });
    const search = createMemorySearch({ backend });
    const question = "Which pottery studio runs the weekend classes?";
    const { results } = await search.search(question);
    expect(results.map((result) => result.path)).toEqual(["memory/2025-02-01.md"]);
    // A fixed floor would have hidden it: it is the only passage that matches, and it scores low.
    expect(results[0]!.score).toBeLessThan(0.25);
    expect((await search.search(question, { minScore: 0.25 })).results).toEqual([]);
  });

  it("returns nothing when no passage shares a meaningful word with the query", async () => {
    await put({
      "memory/2025-01-01.md": "What did they do about it? They would not say when.",
      "memory/2025-01-02.md": "Booked the dentist for March.",
    });
    const response = await createMemorySearch({ backend }).search("What did they do about the zeppelin?");
    expect(response.results).toEqual([]);
    const dentist = await createMemorySearch({ backend }).search("What did they do about the dentist?");
    expect(dentist.results.map((result) => result.path)).toEqual(["memory/2025-01-02.md"]);
  });

  it("keeps a hit found by its vector alone only from unmatchedMinScore up", async () => {
    const vector = (x: number) => [x, Math.sqrt(1 - x * x), ...Array.from({ length: 14 }, () => 0)];
    const texts = {
      "memory/text.md": "Zebra migration happens in July.",
      "memory/close.md": "Striped grazers cross the river.",
      "memory/far.md": "The tax forms are due in April.",
    };
    const embedder = createTableEmbedder(
      new Map([
        ["zebra", vector(1)],
        [texts["memory/text.md"], vector(0)],
        [texts["memory/close.md"], vector(0.9)],
        [texts["memory/far.md"], vector(0.2)],
      ]),
    );
    await put(texts, embedder);
    const response = await createMemorySearch({ backend, embedder }).search("zebra");
    expect(response.mode).toBe("hybrid");
    expect(response.results.map((result) => result.path).sort()).toEqual([
      "memory/close.md",
      "memory/text.md",
    ]);
    const lower = await createMemorySearch({ backend, embedder, unmatchedMinScore: 0.1 }).search("zebra");
    expect(lower.results.map((result) => result.path)).toContain("memory/far.md");
  });

  it("dates each hit: a daily log by its day, MEMORY.md and notes by when the file was last modified", async () => {
    const modified = Date.UTC(2026, 10, 20, 9, 0);
    for (const [file, text] of [
      ["memory/2025-03-14.md", "Moved the book club to the library on Elm Street."],
      ["MEMORY.md", "The book club meets monthly."],
      ["memory/clubs/book-club.md", "Book club reading list: Middlemarch."],
    ] as const) {
      await backend.upsertFile(fileFor(file, text, modified), indexChunks(file, text));
    }
    const { results } = await createMemorySearch({ backend }).search("book club");
    expect(Object.fromEntries(results.map((result) => [result.path, result.date]))).toEqual({
      "memory/2025-03-14.md": "2025-03-14",
      "MEMORY.md": "2026-11-20",
      "memory/clubs/book-club.md": "2026-11-20",
    });
  });

  it("answers an empty query with no results and a note", async () => {
    const response = await createMemorySearch({ backend }).search("  ?! ");
    expect(response).toEqual({ results: [], mode: "text", note: "The query has no words to search for." });
  });

  it("falls back to full text for one query when its embedding fails, saying why", async () => {
    await put({ "MEMORY.md": "The garage code is 4471." }, createTableEmbedder());
    let fail = true;
    const embedder: Embedder = {
      modelName: "table-embedder",
      dimensions: 16,
      embed: async (texts) => {
        if (fail) throw new Error("timeout");
        return createTableEmbedder().embed(texts);
      },
    };
    const search = createMemorySearch({ backend, embedder });
    const degraded = await search.search("garage code");
    expect(degraded).toMatchObject({
      mode: "text",
      note: expect.stringContaining("the embedding provider failed (timeout)"),
    });
    expect(degraded.results).toHaveLength(1);
    fail = false;
    expect(await search.search("garage code")).toMatchObject({
      mode: "hybrid",
      results: [{ mode: "hybrid" }],
    });
  });

  it("searches full text, and says so, when the query vector does not fit the index", async () => {
    await put({ "MEMORY.md": "The garage code is 4471." }, createTableEmbedder());
    const small: Embedder = {
      modelName: "small",
      dimensions: 4,
      embed: async (texts) => texts.map(() => [1, 0, 0, 0]),
    };
    const response = await createMemorySearch({ backend, embedder: small }).search("garage");
    expect(response).toMatchObject({ mode: "text", note: expect.stringContaining("reindex needed") });
    expect(response.results.map((result) => result.path)).toEqual(["MEMORY.md"]);
  });
});
