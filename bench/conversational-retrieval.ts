/**
 * Ranking on conversational memory: Almanac's default full-text search beside a plain BM25
 * (bench/bm25-baseline.ts) on the set in bench/fixtures/conversational (50 days of dialogue
 * logs plus summarizer bullets and a MEMORY.md; English and Chinese questions, each with the lines
 * that answer it). A hit is a result in the right file whose line range holds an answer line.
 * Run: npx tsx bench/conversational-retrieval.ts [--misses] [--json <file>]   (not part of the test run)
 * `--misses` lists the tuning half's misses; the reported half is never listed, so tuning cannot see it.
 * `--json` writes the figures (bench/figures.ts), the reported half's with their target: the default search
 * at least 3 points above BM25 on R@1 and MRR@10 and not below it on R@5 and R@10, in each language (the
 * criterion `packages/memory-index/src/conversational-ranking.test.ts` checks).
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { listMemoryFiles } from "@almanac/memory-files";
import { createMemoryIndexer, createMemorySearch, createSqliteIndex } from "@almanac/memory-index";
import { createBm25Baseline } from "./bm25-baseline.js";
import { Figures, jsonOption } from "./figures.js";

const { values } = parseArgs({ options: { misses: { type: "boolean", default: false }, ...jsonOption } });

const FIXTURES = fileURLToPath(new URL("./fixtures/conversational/", import.meta.url));
const TOP = 10;
const kinds = ["single-hop", "multi-hop", "temporal", "open-domain", "never-said"] as const;
const languages = ["en", "zh"] as const;
const splits = ["tune", "report"] as const;

type Kind = (typeof kinds)[number];

interface Evidence {
  readonly file: string;
  readonly lines: readonly number[];
}

interface Question {
  readonly id: string;
  readonly language: (typeof languages)[number];
  readonly kind: Kind;
  readonly split: (typeof splits)[number];
  readonly question: string;
  readonly answer: string | null;
  readonly evidence: readonly Evidence[];
}

/** A ranked result, whichever system returned it. */
interface Ranked {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly score: number;
}

function oneOf<T extends string>(value: unknown, options: readonly T[]): value is T {
  return typeof value === "string" && (options as readonly string[]).includes(value);
}

function parseEvidence(value: unknown): Evidence | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { file, lines } = value as Record<string, unknown>;
  if (typeof file !== "string" || !Array.isArray(lines)) return undefined;
  const numbers = lines.filter((line): line is number => Number.isInteger(line) && line > 0);
  return numbers.length === lines.length && numbers.length > 0 ? { file, lines: numbers } : undefined;
}

/** Parses one line of questions.jsonl (untrusted input: checked field by field). */
function parseQuestion(text: string, lineNumber: number): Question {
  const raw: unknown = JSON.parse(text);
  const fail = (why: string) => new RangeError(`questions.jsonl line ${lineNumber}: ${why}`);
  if (typeof raw !== "object" || raw === null) throw fail("not an object");
  const record = raw as Record<string, unknown>;
  const { id, language, kind, split, question, answer, evidence } = record;
  if (typeof id !== "string" || typeof question !== "string") throw fail("id and question must be strings");
  if (!oneOf(language, languages) || !oneOf(kind, kinds) || !oneOf(split, splits))
    throw fail("unknown language, kind or split");
  if (answer !== null && typeof answer !== "string") throw fail("answer must be a string or null");
  if (!Array.isArray(evidence)) throw fail("evidence must be an array");
  const parsed = evidence.map(parseEvidence);
  if (parsed.some((entry) => entry === undefined)) throw fail("malformed evidence");
  const groups = parsed.filter((entry): entry is Evidence => entry !== undefined);
  if ((kind === "never-said") !== (groups.length === 0))
    throw fail("only never-said questions lack evidence");
  return { id, language, kind, split, question, answer, evidence: groups };
}

async function loadQuestions(): Promise<Question[]> {
  const text = await readFile(path.join(FIXTURES, "questions.jsonl"), "utf8");
  return text
    .split("\n")
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, index }) => parseQuestion(line, index + 1));
}

const covers = (result: Ranked, evidence: Evidence) =>
  result.path === evidence.file &&
  evidence.lines.some((line) => line >= result.startLine && line <= result.endLine);

/** Rank (1-based) of the first result holding any answer line, within the top 10. */
function firstHit(question: Question, results: readonly Ranked[]): number | undefined {
  const index = results
    .slice(0, TOP)
    .findIndex((result) => question.evidence.some((evidence) => covers(result, evidence)));
  return index === -1 ? undefined : index + 1;
}

/** Every piece of evidence (each hop of a multi-hop question) is in the top 10. */
function allInTop(question: Question, results: readonly Ranked[]): boolean {
  return question.evidence.every((evidence) =>
    results.slice(0, TOP).some((result) => covers(result, evidence)),
  );
}

interface Measures {
  readonly count: number;
  readonly r1: number;
  readonly r5: number;
  readonly r10: number;
  readonly mrr: number;
  readonly all10: number;
}

function measure(questions: readonly Question[], rankings: ReadonlyMap<string, readonly Ranked[]>): Measures {
  let r1 = 0;
  let r5 = 0;
  let r10 = 0;
  let mrr = 0;
  let all10 = 0;
  for (const question of questions) {
    const results = rankings.get(question.id) ?? [];
    const rank = firstHit(question, results);
    if (rank !== undefined) {
      if (rank <= 1) r1 += 1;
      if (rank <= 5) r5 += 1;
      r10 += 1;
      mrr += 1 / rank;
    }
    if (allInTop(question, results)) all10 += 1;
  }
  const share = (value: number) => (questions.length === 0 ? Number.NaN : (100 * value) / questions.length);
  return {
    count: questions.length,
    r1: share(r1),
    r5: share(r5),
    r10: share(r10),
    mrr: share(mrr),
    all10: share(all10),
  };
}

/** Area under the ROC curve of "top score" separating answerable questions from never-said ones. */
function separation(answerable: readonly number[], never: readonly number[]): number {
  let wins = 0;
  for (const positive of answerable) {
    for (const negative of never) wins += positive > negative ? 1 : positive === negative ? 0.5 : 0;
  }
  return wins / Math.max(1, answerable.length * never.length);
}

const format = (value: number) => (Number.isNaN(value) ? "–" : value.toFixed(1));

async function main(): Promise<void> {
  const showMisses = values.misses;
  const figures = new Figures(values.json);
  const questions = await loadQuestions();
  const workspace = path.join(FIXTURES, "workspace");
  const files = await listMemoryFiles(workspace);
  const lastDay = files
    .map((file) => /(\d{4}-\d{2}-\d{2})\.md$/u.exec(file)?.[1])
    .filter((day): day is string => day !== undefined)
    .sort()
    .at(-1);
  // Questions are asked the day after the last log, at noon: the recency boost sees a recent
  // conversation, and the numbers do not drift as the fixture ages.
  const now = lastDay === undefined ? Date.now() : Date.parse(`${lastDay}T12:00:00Z`) + 86_400_000;

  const directory = await mkdtemp(path.join(tmpdir(), "almanac-conversational-bench-"));
  const backend = createSqliteIndex({ path: path.join(directory, "text.sqlite") });
  try {
    await createMemoryIndexer({ workspace, backend, clock: () => now }).sync();
    const search = createMemorySearch({ backend, clock: () => now });
    // A diagnostic, not a second system: the same search without its recency boost.
    const noRecency = createMemorySearch({ backend, clock: () => now, scoring: { recencyWeight: 0 } });
    const bm25 = await createBm25Baseline(workspace, files);
    const stats = await backend.stats();

    const defaults = new Map<string, readonly Ranked[]>();
    const baseline = new Map<string, readonly Ranked[]>();
    const thresholded = new Map<string, number>();
    const withoutRecency = new Map<string, readonly Ranked[]>();
    let defaultMs = 0;
    let bm25Ms = 0;
    for (const question of questions) {
      let started = performance.now();
      const response = await search.search(question.question, { maxResults: TOP, minScore: 0 });
      defaultMs += performance.now() - started;
      defaults.set(question.id, response.results);
      started = performance.now();
      baseline.set(question.id, bm25.search(question.question, TOP));
      bm25Ms += performance.now() - started;
      withoutRecency.set(
        question.id,
        (await noRecency.search(question.question, { maxResults: TOP, minScore: 0 })).results,
      );
      // What the agent's memory_search would show with the default score floor.
      const shown = await search.search(question.question, { maxResults: TOP });
      thresholded.set(question.id, shown.results.length);
    }

    const answerable = questions.filter((question) => question.kind !== "never-said");
    const never = questions.filter((question) => question.kind === "never-said");
    console.log(
      `Conversational set: ${files.length} files, ${questions.length} questions (${answerable.length} with answers, ` +
        `${never.length} never said). Default index: ${stats.chunks} chunks; BM25: ${bm25.chunkCount} chunks of ≤ 400 words.`,
    );
    console.log(
      `Mean query time: default ${(defaultMs / questions.length).toFixed(2)} ms, BM25 ${(bm25Ms / questions.length).toFixed(2)} ms.\n`,
    );
    figures.add("default-mean-query-time", defaultMs / questions.length, "ms");
    figures.add("bm25-mean-query-time", bm25Ms / questions.length, "ms");
    console.log(
      "Cells are default / BM25, in %. A hit: the right file, a line range that holds an answer line.\n",
    );
    const header = "| questions | n | R@1 | R@5 | R@10 | MRR@10 |\n|---|---|---|---|---|---|";
    const row = (label: string, subset: readonly Question[]) => {
      const ours = measure(subset, defaults);
      const theirs = measure(subset, baseline);
      const cell = (key: keyof Measures) => `${format(ours[key])} / ${format(theirs[key])}`;
      return `| ${label} | ${subset.length} | ${cell("r1")} | ${cell("r5")} | ${cell("r10")} | ${cell("mrr")} |`;
    };
    const rows = [
      row("all", answerable),
      ...splits.map((split) =>
        row(
          `split: ${split}`,
          answerable.filter((question) => question.split === split),
        ),
      ),
      ...languages.map((language) =>
        row(
          `tune, ${language}`,
          answerable.filter((question) => question.split === "tune" && question.language === language),
        ),
      ),
      ...languages.map((language) =>
        row(
          `language: ${language}`,
          answerable.filter((question) => question.language === language),
        ),
      ),
      ...kinds
        .filter((kind) => kind !== "never-said")
        .map((kind) =>
          row(
            `kind: ${kind}`,
            answerable.filter((question) => question.kind === kind),
          ),
        ),
    ];
    console.log(`${header}\n${rows.join("\n")}\n`);

    console.log("Reported half only (the numbers to judge a change by), by language and kind:\n");
    const reported = answerable.filter((question) => question.split === "report");
    const reportRows = languages.flatMap((language) => [
      row(
        `report ${language}`,
        reported.filter((question) => question.language === language),
      ),
      ...kinds
        .filter((kind) => kind !== "never-said")
        .map((kind) =>
          row(
            `report ${language} ${kind}`,
            reported.filter((question) => question.language === language && question.kind === kind),
          ),
        ),
    ]);
    console.log(`${header}\n${reportRows.join("\n")}\n`);
    const all = measure(answerable, defaults);
    for (const key of ["r1", "r5", "r10", "mrr"] as const) figures.add(`all-${key}`, all[key], "%");
    for (const language of languages) {
      const subset = reported.filter((question) => question.language === language);
      const ours = measure(subset, defaults);
      const theirs = measure(subset, baseline);
      for (const key of ["r1", "r5", "r10", "mrr"] as const) {
        const margin = key === "r1" || key === "mrr" ? 3 : 0;
        figures.add(`report-${language}-${key}`, ours[key], "%", { atLeast: theirs[key] + margin });
        figures.add(`report-${language}-${key}-bm25`, theirs[key], "%");
      }
    }

    const plain = measure(answerable, withoutRecency);
    console.log(
      `Diagnostic, default search with recencyWeight 0 (all answerable): R@1 ${format(plain.r1)}, R@5 ${format(plain.r5)}, ` +
        `R@10 ${format(plain.r10)}, MRR@10 ${format(plain.mrr)}.`,
    );
    const multi = answerable.filter((question) => question.kind === "multi-hop");
    const multiCell = (subset: readonly Question[]) =>
      `${format(measure(subset, defaults).all10)} / ${format(measure(subset, baseline).all10)}`;
    console.log(
      `Multi-hop, every hop in the top 10 (default / BM25): all ${multiCell(multi)}; ` +
        languages
          .map(
            (language) =>
              `${language} ${multiCell(multi.filter((question) => question.language === language))}`,
          )
          .join("; "),
    );

    const topScore = (rankings: ReadonlyMap<string, readonly Ranked[]>, question: Question) =>
      rankings.get(question.id)?.[0]?.score ?? 0;
    const auc = (rankings: ReadonlyMap<string, readonly Ranked[]>, language?: string) => {
      const inLanguage = (question: Question) => language === undefined || question.language === language;
      return separation(
        answerable.filter(inLanguage).map((question) => topScore(rankings, question)),
        never.filter(inLanguage).map((question) => topScore(rankings, question)),
      ).toFixed(3);
    };
    const shownShare = (subset: readonly Question[]) =>
      format(
        (100 * subset.filter((question) => (thresholded.get(question.id) ?? 0) > 0).length) / subset.length,
      );
    console.log(
      `Never said (${never.length}): top-score AUC answerable vs never-said, default / BM25: all ${auc(defaults)} / ${auc(baseline)}, ` +
        `en ${auc(defaults, "en")} / ${auc(baseline, "en")}, zh ${auc(defaults, "zh")} / ${auc(baseline, "zh")}. ` +
        `Default search with its default score floor returns something for ${shownShare(never)} % of never-said ` +
        `questions (${shownShare(answerable)} % of answerable ones).\n`,
    );

    const text = new Map<string, string[]>();
    for (const file of files)
      text.set(file, (await readFile(path.join(workspace, file), "utf8")).split("\n"));
    for (const [label, rankings] of [
      ["default", defaults],
      ["BM25", baseline],
    ] as const) {
      const firsts = new Map<string, { result: Ranked; questions: Question[] }>();
      for (const question of questions) {
        const result = rankings.get(question.id)?.[0];
        if (result === undefined) continue;
        const key = `${result.path}:${result.startLine}-${result.endLine}`;
        const entry = firsts.get(key) ?? { result, questions: [] };
        entry.questions.push(question);
        firsts.set(key, entry);
      }
      const hubs = [...firsts].filter(([, entry]) => entry.questions.length >= 5);
      hubs.sort(([, a], [, b]) => b.questions.length - a.questions.length);
      console.log(`Hub chunks (${label}): results ranked first for ≥ 5 questions: ${hubs.length}`);
      for (const [key, entry] of hubs) {
        const correct = entry.questions.filter((question) => firstHit(question, [entry.result]) === 1).length;
        const lines = (text.get(entry.result.path) ?? []).slice(
          entry.result.startLine - 1,
          entry.result.endLine,
        );
        const words = lines.join(" ").split(/\s+/u).length;
        console.log(
          `  ${key}: first for ${entry.questions.length} (${correct} correctly), ${lines.length} lines / ${words} words`,
        );
      }
      console.log("");
    }

    if (showMisses) {
      console.log("Misses at rank 1 of the default search, tuning half only:");
      for (const question of answerable.filter((candidate) => candidate.split === "tune")) {
        if (firstHit(question, defaults.get(question.id) ?? []) === 1) continue;
        const top = defaults.get(question.id)?.[0];
        const bm25Rank = firstHit(question, baseline.get(question.id) ?? []);
        console.log(
          `  [${question.id}] ${question.question} → ${question.evidence.map((e) => `${e.file}:${e.lines.join(",")}`).join(" + ")}; ` +
            `default rank ${firstHit(question, defaults.get(question.id) ?? []) ?? ">10"}, BM25 rank ${bm25Rank ?? ">10"}; ` +
            `default first: ${top === undefined ? "nothing" : `${top.path}:${top.startLine}-${top.endLine}`}`,
        );
      }
    }
    figures.write();
  } finally {
    await backend.close();
    await rm(directory, { recursive: true, force: true });
  }
}

await main();
