/**
 * Recall@5 on the retrieval-quality set (packages/memory-index/fixtures/retrieval): plain substring
 * search (the baseline), full-text only, and hybrid with the test kit's local scripted embedder
 * (hashed-word vectors: lexical, not semantic, so it shows the plumbing rather than a real model).
 * Run: npx tsx bench/retrieval-quality.ts [--json <file>]   (not part of the test run)
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import type { Embedder } from "@almanac/core";
import { createOpenAIEmbedder } from "@almanac/llm";
import { createMemoryIndexer, createMemorySearch, createSqliteIndex } from "@almanac/memory-index";
import { startScriptedLlm } from "@almanac/testkit";
import {
  createSubstringBaseline,
  loadRetrievalSet,
  type RetrievalQuestion,
  recallAtK,
} from "../packages/memory-index/test/retrieval-set.js";
import { Figures, jsonOption } from "./figures.js";

const { values } = parseArgs({ options: { ...jsonOption } });
const figures = new Figures(values.json);

type Ranking = (question: string) => Promise<readonly string[]>;

async function searchRanking(workspace: string, directory: string, embedder?: Embedder): Promise<Ranking> {
  const backend = createSqliteIndex({
    path: path.join(directory, `${embedder === undefined ? "text" : "hybrid"}.sqlite`),
  });
  await createMemoryIndexer({ workspace, backend, ...(embedder === undefined ? {} : { embedder }) }).sync();
  const search = createMemorySearch({ backend, ...(embedder === undefined ? {} : { embedder }) });
  return async (question) =>
    (await search.search(question, { maxResults: 10, minScore: 0 })).results.map((r) => r.path);
}

async function report(
  label: string,
  name: string,
  questions: readonly RetrievalQuestion[],
  rank: Ranking,
): Promise<string[]> {
  const cached = new Map<string, readonly string[]>();
  const memo: Ranking = async (question) => {
    const known = cached.get(question);
    if (known !== undefined) return known;
    const ranked = await rank(question);
    cached.set(question, ranked);
    return ranked;
  };
  const byLanguage = (language: string) => questions.filter((question) => question.language === language);
  const all = await recallAtK(questions, memo);
  const english = await recallAtK(byLanguage("en"), memo);
  const chinese = await recallAtK(byLanguage("zh"), memo);
  const first = await recallAtK(questions, memo, 1);
  const cell = (value: { recall: number; found: number; total: number }) =>
    `${value.recall.toFixed(3)} (${value.found}/${value.total})`;
  console.log(`| ${label} | ${cell(all)} | ${cell(english)} | ${cell(chinese)} | ${cell(first)} |`);
  figures.add(`${name}-recall-at-5`, all.recall, "share");
  figures.add(`${name}-recall-at-5-en`, english.recall, "share");
  figures.add(`${name}-recall-at-5-zh`, chinese.recall, "share");
  figures.add(`${name}-recall-at-1`, first.recall, "share");
  return all.missed.map((missed) => `${label}: missed "${missed.question}" → ${missed.answer}`);
}

const set = await loadRetrievalSet();
const directory = await mkdtemp(path.join(tmpdir(), "almanac-retrieval-bench-"));
const llm = await startScriptedLlm({ embeddingDimensions: 256 });
try {
  const embedder = createOpenAIEmbedder({
    baseURL: llm.baseURL,
    apiKey: "",
    model: "scripted-embedding",
    maxRetries: 0,
  });
  console.log(`Retrieval-quality set: ${set.questions.length} questions. Recall@5 (distinct notes).\n`);
  console.log("| ranking | recall@5 | recall@5 English | recall@5 Chinese | recall@1 |");
  console.log("|---|---|---|---|---|");
  const missed = [
    ...(await report(
      "substring baseline",
      "substring",
      set.questions,
      await createSubstringBaseline(set.workspace),
    )),
    ...(await report(
      "full-text only",
      "full-text",
      set.questions,
      await searchRanking(set.workspace, directory),
    )),
    ...(await report(
      "hybrid (scripted embedder)",
      "hybrid",
      set.questions,
      await searchRanking(set.workspace, directory, embedder),
    )),
  ];
  console.log(`\n${missed.join("\n")}`);
  figures.write();
} finally {
  await llm.close();
  await rm(directory, { recursive: true, force: true });
}
