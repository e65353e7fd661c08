import { mkdir, mkdtemp, readFile, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { WorkingMemory } from "@almanac/agent";
import { createCompactor } from "@almanac/compaction";
import type { Message } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { type RecordedChatRequest, type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { isSummaryRequest, summaryStep } from "../../compaction/test/scripted-session.js";
import {
  assistant,
  createRandom,
  generatedText,
  type RoundCall,
  toolRound,
  user,
} from "../../compaction/test/transcripts.js";
import { factSummarizerStep } from "../test/fact-summarizer.js";
import { createSummarizer } from "./summarizer.js";
import { createSummaryQueue } from "./summary-queue.js";

const counter = createTokenCounter();
const day = Date.UTC(2024, 4, 1, 8);
const tools = [
  { name: "read_file", description: "Read a file of the workspace.", parameters: { type: "object" } },
  { name: "memory_search", description: "Search long-term memory.", parameters: { type: "object" } },
];

const textSpec = fc.record({ seed: fc.integer(), chars: fc.integer({ min: 5, max: 12_000 }) });
const turnSpec = fc.record({
  request: textSpec,
  rounds: fc.array(fc.array(textSpec, { minLength: 1, maxLength: 2 }), { maxLength: 2 }),
  reply: fc.record({ seed: fc.integer(), chars: fc.integer({ min: 5, max: 3_000 }) }),
});
const scenarioSpec = fc.record({
  window: fc.integer({ min: 4_096, max: 200_000 }),
  maxOutputTokens: fc.integer({ min: 256, max: 16_384 }),
  turns: fc.array(turnSpec, { minLength: 1, maxLength: 12 }),
});
type Scenario = typeof scenarioSpec extends fc.Arbitrary<infer T> ? T : never;

/** A random transcript: long and short messages, tool calls with big outputs, CJK text, and one fact per turn. */
function transcript(scenario: Scenario): Message[] {
  let now = day;
  const clock = () => {
    now += 30_000;
    return now;
  };
  const messages: Message[] = [];
  for (const [index, turn] of scenario.turns.entries()) {
    const text = generatedText(createRandom(turn.request.seed), turn.request.chars);
    messages.push(user(`FACT-T${index} ${text}`, clock));
    for (const round of turn.rounds) {
      const calls: RoundCall[] = round.map((output, call) => ({
        name: "read_file",
        arguments: { path: `notes/${index}-${call}.md` },
        output: generatedText(createRandom(output.seed), output.chars * 4),
        isError: false,
      }));
      messages.push(...toolRound(calls, clock));
    }
    messages.push(assistant(generatedText(createRandom(turn.reply.seed), turn.reply.chars), clock));
  }
  return messages;
}

/** (prompt + requested completion) / window of each request the strict server accepted. */
function shares(requests: readonly RecordedChatRequest[], window: number): number[] {
  return requests
    .filter((request) => request.rejected === undefined)
    .map(
      (request) =>
        ((request.promptTokens ?? 0) + Number(request.max_tokens ?? request.max_completion_tokens ?? 0)) /
        window,
    );
}

const seen = { summarizer: [] as number[], compactor: [] as number[] };
afterAll(() => {
  const report = (name: string, values: number[]) =>
    `${name}: ${values.length} requests, largest ${(Math.max(...values) * 100).toFixed(1)} % of the window`;
  console.info(`${report("summarizer", seen.summarizer)}; ${report("compactor", seen.compactor)}`);
});

async function withStrictServer<T>(windowTokens: number, run: (server: ScriptedLlm) => Promise<T>) {
  const server = await startScriptedLlm({ contextWindow: windowTokens });
  server.setFallback((request) =>
    isSummaryRequest(request) ? summaryStep(request, "- merged") : factSummarizerStep(request),
  );
  try {
    return await run(server);
  } finally {
    await server.close();
  }
}

describe("every request fits the window (strict scripted server, windows from 4K to 200K)", () => {
  it("the summarizer: no request refused or over the window, every fact in the day's log, no job parked", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        await withStrictServer(scenario.window, async (server) => {
          const base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-fit-")));
          try {
            const workspace = path.join(base, "workspace");
            const stateDir = path.join(base, "state");
            await mkdir(path.join(workspace, "memory"), { recursive: true });
            const model = createOpenAIChatModel({
              baseURL: server.baseURL,
              apiKey: "k",
              model: "scripted-model",
              maxRetries: 0,
            });
            const summarizer = createSummarizer({
              model,
              workspace,
              stateDir,
              timeZone: "UTC",
              tokenCounter: counter,
              contextWindow: scenario.window,
              maxOutputTokens: scenario.maxOutputTokens,
            });
            const queue = createSummaryQueue({ stateDir, run: summarizer, backoff: () => 0 });
            const messages = transcript(scenario);
            await queue.enqueue({
              sessionKey: "web:local:dm:ann",
              reason: "new-session",
              messages,
              createdAt: day,
            });
            await queue.start();
            await queue.idle();
            await queue.stop({ deadlineMs: 10 });
            expect(server.rejections()).toEqual([]);
            expect((await queue.list())[0]?.state).toBe("done");
            const log = await readFile(path.join(workspace, "memory", "2024-05-01.md"), "utf8");
            for (const index of scenario.turns.keys()) expect(log).toContain(`FACT-T${index} `);
            const fit = shares(server.chatRequests(), scenario.window);
            seen.summarizer.push(...fit);
            for (const share of fit) expect(share).toBeLessThanOrEqual(1);
          } finally {
            await rm(base, { recursive: true, force: true });
          }
        });
      }),
      { numRuns: 25 },
    );
  });

  it("the compactor: its summary requests are never refused or over the window", async () => {
    await fc.assert(
      fc.asyncProperty(scenarioSpec, async (scenario) => {
        const cap = Math.min(scenario.maxOutputTokens, Math.floor(scenario.window / 4));
        await withStrictServer(scenario.window, async (server) => {
          const model = createOpenAIChatModel({
            baseURL: server.baseURL,
            apiKey: "k",
            model: "scripted-model",
            maxRetries: 0,
          });
          const compactor = createCompactor({
            tokenCounter: counter,
            contextWindow: scenario.window,
            maxOutputTokens: cap,
            summaryModel: model,
          });
          const memory = new WorkingMemory({ messages: transcript(scenario) });
          const result = await compactor.compact(memory, {
            systemPrompt: "You are Almanac.",
            tools,
            reason: "command",
          });
          expect(server.rejections()).toEqual([]);
          expect(result.summarizer === "static" && result.llmCalls > 0).toBe(false);
          const fit = shares(server.chatRequests(), scenario.window);
          seen.compactor.push(...fit);
          for (const share of fit) expect(share).toBeLessThanOrEqual(1);
        });
      }),
      { numRuns: 25 },
    );
  });
});
