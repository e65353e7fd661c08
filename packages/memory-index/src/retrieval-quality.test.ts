import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createSubstringBaseline,
  loadRetrievalSet,
  type RetrievalSet,
  recallAtK,
} from "../test/retrieval-set.js";
import { createMemoryIndexer } from "./memory-indexer.js";
import { createMemorySearch, type MemorySearch } from "./memory-search.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

describe("retrieval quality on the fixture set", () => {
  let set: RetrievalSet;
  let directory: string;
  let backend: MemoryIndexBackend;
  let search: MemorySearch;

  beforeAll(async () => {
    set = await loadRetrievalSet();
    directory = await mkdtemp(path.join(tmpdir(), "almanac-retrieval-"));
    backend = createSqliteIndex({ path: path.join(directory, "memory.sqlite") });
    await createMemoryIndexer({ workspace: set.workspace, backend }).sync();
    search = createMemorySearch({ backend });
  });

  afterAll(async () => {
    await backend.close();
    await rm(directory, { recursive: true, force: true });
  });

  const textRanking = async (question: string) =>
    (await search.search(question, { maxResults: 10, minScore: 0 })).results.map((result) => result.path);

  it("has at least 30 notes and 40 questions in English and Chinese", () => {
    expect(set.questions.length).toBeGreaterThanOrEqual(40);
    expect(set.questions.some((question) => question.language === "zh")).toBe(true);
    expect(new Set(set.questions.map((question) => question.answer)).size).toBeGreaterThanOrEqual(30);
  });

  it("full-text search beats plain substring search on recall@5", async () => {
    const text = await recallAtK(set.questions, textRanking);
    const baseline = await recallAtK(set.questions, await createSubstringBaseline(set.workspace));
    expect(text.recall).toBeGreaterThan(baseline.recall);
  });

  it("full-text search beats plain substring search on the Chinese questions alone", async () => {
    const chinese = set.questions.filter((question) => question.language === "zh");
    const text = await recallAtK(chinese, textRanking);
    const baseline = await recallAtK(chinese, await createSubstringBaseline(set.workspace));
    expect(text.recall).toBeGreaterThan(baseline.recall);
  });
});
