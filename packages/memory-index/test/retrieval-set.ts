import { readFile } from "node:fs/promises";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { listMemoryFiles } from "@almanac/memory-files";
import { z } from "zod";

// The retrieval-quality set (packages/memory-index/fixtures/retrieval) and the measures over it, shared
// by retrieval-quality.test.ts and bench/retrieval-quality.ts. Not part of the runtime.

/** The fixture directory: `workspace/` (the notes) and `questions.json`. */
export const RETRIEVAL_FIXTURES = fileURLToPath(new URL("../fixtures/retrieval/", import.meta.url));

const questionSchema = z.object({
  question: z.string().min(1),
  answer: z.string().min(1),
  language: z.enum(["en", "zh"]),
});
const setSchema = z.object({ description: z.string(), questions: z.array(questionSchema).min(1) });

/** One question and the note (workspace-relative path) that answers it. */
export type RetrievalQuestion = z.infer<typeof questionSchema>;

/** The loaded set. */
export interface RetrievalSet {
  readonly workspace: string;
  readonly questions: readonly RetrievalQuestion[];
}

/** Loads and validates the set; every answer must name a note of the workspace. */
export async function loadRetrievalSet(directory: string = RETRIEVAL_FIXTURES): Promise<RetrievalSet> {
  const workspace = path.join(directory, "workspace");
  const raw: unknown = JSON.parse(await readFile(path.join(directory, "questions.json"), "utf8"));
  const { questions } = setSchema.parse(raw);
  const notes = new Set(await listMemoryFiles(workspace));
  const unknown = questions.filter((question) => !notes.has(question.answer));
  if (unknown.length > 0)
    throw new RangeError(`questions.json names missing notes: ${unknown.map((q) => q.answer).join(", ")}`);
  return { workspace, questions };
}

/** Recall@k: the share of questions whose answer is among the first k distinct notes returned. */
export interface RecallReport {
  readonly recall: number;
  readonly found: number;
  readonly total: number;
  /** Questions whose answer was not in the first k. */
  readonly missed: readonly RetrievalQuestion[];
}

/** Measures recall@k of a ranking function (question → note paths, best first). */
export async function recallAtK(
  questions: readonly RetrievalQuestion[],
  rank: (question: string) => Promise<readonly string[]>,
  k = 5,
): Promise<RecallReport> {
  const missed: RetrievalQuestion[] = [];
  for (const question of questions) {
    const top = [...new Set(await rank(question.question))].slice(0, k);
    if (!top.includes(question.answer)) missed.push(question);
  }
  const found = questions.length - missed.length;
  return { recall: found / questions.length, found, total: questions.length, missed };
}

/**
 * The baseline to beat: plain substring search. The question is cut on spaces and punctuation;
 * each note scores the number of pieces (two characters or more) it contains, case-insensitively;
 * ties keep path order. This is what `grep -i` per word gives.
 */
export async function createSubstringBaseline(
  workspace: string,
): Promise<(question: string) => Promise<string[]>> {
  const notes = await Promise.all(
    (await listMemoryFiles(workspace)).map(async (note) => ({
      path: note,
      text: (await readFile(path.join(workspace, note), "utf8")).toLowerCase(),
    })),
  );
  return async (question) => {
    const pieces = question
      .toLowerCase()
      .split(/[\s\p{P}]+/u)
      .filter((piece) => piece.length >= 2);
    return notes
      .map((note) => ({ path: note.path, score: pieces.filter((piece) => note.text.includes(piece)).length }))
      .filter((entry) => entry.score > 0)
      .sort((a, b) => b.score - a.score)
      .map((entry) => entry.path);
  };
}
