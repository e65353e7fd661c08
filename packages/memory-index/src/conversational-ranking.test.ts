import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { listMemoryFiles } from "@almanac/memory-files";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createBm25Baseline } from "../../../bench/bm25-baseline.js";
import { createMemoryIndexer } from "./memory-indexer.js";
import { createMemorySearch } from "./memory-search.js";
import { createSqliteIndex } from "./sqlite-index.js";
import type { MemoryIndexBackend } from "./types.js";

// The ranking criterion on the conversational set (bench/fixtures/conversational), as a guard:
// in English and in Chinese, on the tuning half and on the reported half, the default full-text search
// beats a plain BM25 by at least 3 points on R@1 and MRR@10 and is never below it on R@5 and R@10.
// Ranking was tuned on the tuning half only; the reported half was looked at once, for the final
// candidate (BENCHMARKS.md). The full table is `pnpm bench:conversational`.

const fixtures = fileURLToPath(new URL("../../../bench/fixtures/conversational/", import.meta.url));
const workspace = path.join(fixtures, "workspace");

const questionSchema = z.object({
  id: z.string(),
  split: z.enum(["tune", "report"]),
  language: z.enum(["en", "zh"]),
  kind: z.string(),
  question: z.string(),
  evidence: z.array(z.object({ file: z.string(), lines: z.array(z.number().int().positive()) })),
});
type Question = z.infer<typeof questionSchema>;

interface Ranked {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
}

/** Rank (1-based) of the first of the top 10 whose line range holds an answer line. */
function firstHit(question: Question, results: readonly Ranked[]): number | undefined {
  const index = results
    .slice(0, 10)
    .findIndex((result) =>
      question.evidence.some(
        (evidence) =>
          result.path === evidence.file &&
          evidence.lines.some((line) => line >= result.startLine && line <= result.endLine),
      ),
    );
  return index === -1 ? undefined : index + 1;
}

/** R@1, R@5, R@10 and MRR@10, in %. */
function measure(questions: readonly Question[], rankings: ReadonlyMap<string, readonly Ranked[]>) {
  let first = 0;
  let five = 0;
  let ten = 0;
  let reciprocal = 0;
  for (const question of questions) {
    const rank = firstHit(question, rankings.get(question.id) ?? []);
    if (rank === undefined) continue;
    if (rank === 1) first += 1;
    if (rank <= 5) five += 1;
    ten += 1;
    reciprocal += 1 / rank;
  }
  const share = (count: number) => (100 * count) / questions.length;
  return { r1: share(first), r5: share(five), r10: share(ten), mrr: share(reciprocal) };
}

describe("ranking on conversational memory", () => {
  let directory: string;
  let backend: MemoryIndexBackend;
  const answerable: Question[] = [];
  const defaults = new Map<string, readonly Ranked[]>();
  const baseline = new Map<string, readonly Ranked[]>();

  beforeAll(async () => {
    const lines = (await readFile(path.join(fixtures, "questions.jsonl"), "utf8")).split("\n");
    for (const line of lines) {
      if (line.trim() === "") continue;
      const question = questionSchema.parse(JSON.parse(line));
      if (question.evidence.length > 0) answerable.push(question);
    }
    const files = await listMemoryFiles(workspace);
    // Noon the day after the last log, as the bench does: recency sees a recent conversation.
    const now = Date.parse("2025-04-12T12:00:00Z");
    directory = await mkdtemp(path.join(tmpdir(), "almanac-conversational-"));
    backend = createSqliteIndex({ path: path.join(directory, "index.sqlite") });
    await createMemoryIndexer({ workspace, backend, clock: () => now }).sync();
    const search = createMemorySearch({ backend, clock: () => now });
    const bm25 = await createBm25Baseline(workspace, files);
    for (const question of answerable) {
      const response = await search.search(question.question, { maxResults: 10, minScore: 0 });
      defaults.set(question.id, response.results);
      baseline.set(question.id, bm25.search(question.question, 10));
    }
  });

  afterAll(async () => {
    await backend.close();
    await rm(directory, { recursive: true, force: true });
  });

  it("holds enough questions in each language and half to mean something", () => {
    for (const split of ["tune", "report"] as const) {
      const inSplit = answerable.filter((question) => question.split === split);
      expect(inSplit.filter((question) => question.language === "en").length).toBeGreaterThanOrEqual(80);
      expect(inSplit.filter((question) => question.language === "zh").length).toBeGreaterThanOrEqual(60);
    }
  });

  it.each([
    ["tune", "en"],
    ["tune", "zh"],
    ["report", "en"],
    ["report", "zh"],
  ] as const)(
    "beats plain BM25 by 3 points on R@1 and MRR@10 and never falls below it on R@5 or R@10 (%s half, %s)",
    (split, language) => {
      const questions = answerable.filter(
        (question) => question.split === split && question.language === language,
      );
      const ours = measure(questions, defaults);
      const theirs = measure(questions, baseline);
      expect(ours.r1).toBeGreaterThanOrEqual(theirs.r1 + 3);
      expect(ours.mrr).toBeGreaterThanOrEqual(theirs.mrr + 3);
      expect(ours.r5).toBeGreaterThanOrEqual(theirs.r5);
      expect(ours.r10).toBeGreaterThanOrEqual(theirs.r10);
    },
  );
});
