/**
 * The conversational retrieval sets and how a ranking is scored on them, for bench/conversational-retrieval.ts
 * and the ranking guard (packages/memory-index/src/conversational-ranking.test.ts), so both count a hit alike.
 * Each set is a folder under bench/fixtures/ with a `workspace/` (MEMORY.md, memory/**) and `questions.jsonl`
 * (`{id, split, language, kind, question, answer, evidence: [{file, lines}]}`; a question without evidence was
 * never said). `conversational`: dialogue logs (generate-conversational.ts); `summarized-logs`: logs as the
 * summarizer writes them, from templates written apart from the first set's (generate-summarized-logs.ts).
 */
import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { listMemoryFiles } from "@almanac/memory-files";

/** The sets, in the order they are reported. */
export const conversationalSets = ["conversational", "summarized-logs"] as const;
export type ConversationalSetName = (typeof conversationalSets)[number];

export const languages = ["en", "zh"] as const;
export const splits = ["tune", "report"] as const;

/** Results looked at per question: R@10 and MRR@10. */
export const TOP = 10;

interface Evidence {
  readonly file: string;
  readonly lines: readonly number[];
}

/** One question of a set. */
export interface Question {
  readonly id: string;
  readonly language: (typeof languages)[number];
  /** `single-hop`, `multi-hop`, `temporal`, … (per set); `never-said` has no evidence. */
  readonly kind: string;
  readonly split: (typeof splits)[number];
  readonly question: string;
  readonly answer: string | null;
  /** One group per piece of the answer (each hop of a multi-hop question); any line of a group is that piece. */
  readonly evidence: readonly Evidence[];
}

/** A ranked result, whichever system returned it. */
export interface Ranked {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly score: number;
}

/** A set, loaded. */
export interface ConversationalSet {
  readonly name: ConversationalSetName;
  readonly workspace: string;
  /** Workspace-relative memory files. */
  readonly files: readonly string[];
  readonly questions: readonly Question[];
  /**
   * When the questions are asked: noon the day after the last log, so the recency boost sees a recent
   * conversation and the figures do not drift as the fixture ages.
   */
  readonly now: number;
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
function parseQuestion(text: string, where: string): Question {
  const raw: unknown = JSON.parse(text);
  const fail = (why: string) => new RangeError(`${where}: ${why}`);
  if (typeof raw !== "object" || raw === null) throw fail("not an object");
  const { id, language, kind, split, question, answer, evidence } = raw as Record<string, unknown>;
  if (typeof id !== "string" || typeof question !== "string" || typeof kind !== "string")
    throw fail("id, kind and question must be strings");
  if (!oneOf(language, languages) || !oneOf(split, splits)) throw fail("unknown language or split");
  if (answer !== null && typeof answer !== "string") throw fail("answer must be a string or null");
  if (!Array.isArray(evidence)) throw fail("evidence must be an array");
  const parsed = evidence.map(parseEvidence);
  if (parsed.some((entry) => entry === undefined)) throw fail("malformed evidence");
  const groups = parsed.filter((entry): entry is Evidence => entry !== undefined);
  if ((kind === "never-said") !== (groups.length === 0))
    throw fail("only never-said questions lack evidence");
  return { id, language, kind, split, question, answer, evidence: groups };
}

/** Loads a set from bench/fixtures/<name>/. */
export async function loadConversationalSet(name: ConversationalSetName): Promise<ConversationalSet> {
  const folder = fileURLToPath(new URL(`./fixtures/${name}/`, import.meta.url));
  const text = await readFile(path.join(folder, "questions.jsonl"), "utf8");
  const questions = text
    .split("\n")
    .map((line, index) => ({ line, index }))
    .filter(({ line }) => line.trim() !== "")
    .map(({ line, index }) => parseQuestion(line, `${name}/questions.jsonl line ${index + 1}`));
  const workspace = path.join(folder, "workspace");
  const files = await listMemoryFiles(workspace);
  const lastDay = files
    .map((file) => /(\d{4}-\d{2}-\d{2})\.md$/u.exec(file)?.[1])
    .filter((day): day is string => day !== undefined)
    .sort()
    .at(-1);
  const now = lastDay === undefined ? Date.now() : Date.parse(`${lastDay}T12:00:00Z`) + 86_400_000;
  return { name, workspace, files, questions, now };
}

/** Whether a question has an answer in the logs. */
export const isAnswerable = (question: Question) => question.evidence.length > 0;

const covers = (result: Ranked, evidence: Evidence) =>
  result.path === evidence.file &&
  evidence.lines.some((line) => line >= result.startLine && line <= result.endLine);

/** Rank (1-based) of the first result holding any answer line, within the top 10. */
export function firstHit(question: Question, results: readonly Ranked[]): number | undefined {
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

/** Recall at 1, 5 and 10, MRR@10 and "every hop in the top 10", in % of the questions. */
export interface Measures {
  readonly count: number;
  readonly r1: number;
  readonly r5: number;
  readonly r10: number;
  readonly mrr: number;
  readonly all10: number;
}

export function measure(
  questions: readonly Question[],
  rankings: ReadonlyMap<string, readonly Ranked[]>,
): Measures {
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
