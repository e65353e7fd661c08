import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBm25Baseline } from "../../../bench/bm25-baseline.js";
import {
  type ConversationalSet,
  type ConversationalSetName,
  conversationalSets,
  isAnswerable,
  languages,
  loadConversationalSet,
  measure,
  type Question,
  type Ranked,
  splits,
} from "../../../bench/conversational-sets.js";
import { createMemoryIndexer } from "./memory-indexer.js";
import { createMemorySearch } from "./memory-search.js";
import { createSqliteIndex } from "./sqlite-index.js";

// The ranking criterion on the two conversational sets (bench/conversational-sets.ts), as a guard. The search runs
// with its default settings (only `maxResults: 10`, to read R@10), as `GET /api/memory/search` and `memory_search`
// run it. In English and in Chinese, on the tuning half and on the reported half: it beats a plain BM25 on R@1 and
// MRR@10 (by 3 points on the first set, whose questions ranking was tuned on), is not below it on R@5 (nor R@10 on
// the first set), and its score floor costs under half a point of R@10 against no floor at all. Ranking was tuned
// on tuning halves only; the reported halves are BENCHMARKS.md's. The full tables: `pnpm bench:conversational`.

interface SetRuns {
  readonly set: ConversationalSet;
  readonly defaults: Map<string, readonly Ranked[]>;
  readonly noFloor: Map<string, readonly Ranked[]>;
  readonly baseline: Map<string, readonly Ranked[]>;
}

const runs = new Map<ConversationalSetName, SetRuns>();
let directory: string;

beforeAll(async () => {
  directory = await mkdtemp(path.join(tmpdir(), "almanac-conversational-"));
  for (const name of conversationalSets) {
    const set = await loadConversationalSet(name);
    const backend = createSqliteIndex({ path: path.join(directory, `${name}.sqlite`) });
    try {
      await createMemoryIndexer({ workspace: set.workspace, backend, clock: () => set.now }).sync();
      const search = createMemorySearch({ backend, clock: () => set.now });
      const bm25 = await createBm25Baseline(set.workspace, set.files);
      const entry: SetRuns = { set, defaults: new Map(), noFloor: new Map(), baseline: new Map() };
      for (const question of set.questions.filter(isAnswerable)) {
        entry.defaults.set(question.id, (await search.search(question.question, { maxResults: 10 })).results);
        entry.noFloor.set(
          question.id,
          (await search.search(question.question, { maxResults: 10, minScore: 0 })).results,
        );
        entry.baseline.set(question.id, bm25.search(question.question, 10));
      }
      runs.set(name, entry);
    } finally {
      await backend.close();
    }
  }
}, 60_000);

afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

const cases = conversationalSets.flatMap((name) =>
  splits.flatMap((split) => languages.map((language) => [name, split, language] as const)),
);

function questionsOf(name: ConversationalSetName, split: string, language: string): readonly Question[] {
  return runs
    .get(name)!
    .set.questions.filter(
      (question) => isAnswerable(question) && question.split === split && question.language === language,
    );
}

describe("ranking on conversational memory, default settings", () => {
  it.each(cases)("%s: the %s half holds enough %s questions to mean something", (name, split, language) => {
    expect(questionsOf(name, split, language).length).toBeGreaterThanOrEqual(language === "en" ? 80 : 60);
  });

  it.each(cases)("%s, %s half, %s: beats plain BM25 on R@1 and MRR@10", (name, split, language) => {
    const { defaults, baseline } = runs.get(name)!;
    const questions = questionsOf(name, split, language);
    const ours = measure(questions, defaults);
    const theirs = measure(questions, baseline);
    const margin = name === "conversational" ? 3 : 0;
    expect(ours.r1).toBeGreaterThan(theirs.r1 + margin);
    expect(ours.mrr).toBeGreaterThan(theirs.mrr + margin);
    expect(ours.r5).toBeGreaterThanOrEqual(theirs.r5);
    if (name === "conversational") expect(ours.r10).toBeGreaterThanOrEqual(theirs.r10);
  });

  it.each(cases)(
    "%s, %s half, %s: hides no answer (the floor costs < 0.5 points of R@1, R@5, R@10)",
    (name, split, language) => {
      const { defaults, noFloor } = runs.get(name)!;
      const questions = questionsOf(name, split, language);
      const ours = measure(questions, defaults);
      const all = measure(questions, noFloor);
      for (const key of ["r1", "r5", "r10"] as const) expect(all[key] - ours[key]).toBeLessThan(0.5);
      expect(questions.filter((question) => (defaults.get(question.id) ?? []).length === 0)).toEqual([]);
    },
  );
});
