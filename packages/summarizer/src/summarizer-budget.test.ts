import { mkdir, mkdtemp, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createMessage, type Message } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { createTokenCounter } from "@almanac/tokenizer";
import { afterEach, describe, expect, it } from "vitest";
import { factSummarizerStep } from "../test/fact-summarizer.js";
import { renderTranscript } from "./render-transcript.js";
import { createSummarizer } from "./summarizer.js";
import { lightenConversation, splitEntry } from "./summarizer-budget.js";
import { createSummaryQueue, type SummaryQueue } from "./summary-queue.js";

const counter = createTokenCounter();
const day = Date.UTC(2024, 4, 1);
let llm: ScriptedLlm | undefined;
let queue: SummaryQueue | undefined;
let base: string | undefined;

afterEach(async () => {
  await queue?.stop({ deadlineMs: 10 });
  await llm?.close();
  if (base !== undefined) await rm(base, { recursive: true, force: true });
  queue = undefined;
  llm = undefined;
  base = undefined;
});

/** A strict 8K-style server answered by a summarizer that stores every fact it is shown, and a queue over it. */
async function setUp(window: number, maxOutputTokens: number) {
  llm = await startScriptedLlm({ contextWindow: window });
  llm.setFallback(factSummarizerStep);
  base = await realpath(await mkdtemp(path.join(tmpdir(), "almanac-summarizer-budget-")));
  const workspace = path.join(base, "workspace");
  const stateDir = path.join(base, "state");
  await mkdir(path.join(workspace, "memory"), { recursive: true });
  const model = createOpenAIChatModel({
    baseURL: llm.baseURL,
    apiKey: "k",
    model: "scripted-model",
    contextWindow: window,
    maxRetries: 0,
  });
  const summarizer = createSummarizer({
    model,
    workspace,
    stateDir,
    timeZone: "UTC",
    tokenCounter: counter,
    maxOutputTokens,
  });
  queue = createSummaryQueue({ stateDir, run: summarizer, backoff: () => 0 });
  return { llm, queue, logPath: path.join(workspace, "memory", "2024-05-01.md") };
}

/** A tool-heavy day: every tenth message states a new fact; tool calls return big outputs. */
function toolHeavyDay(messageCount: number, facts: number): Message[] {
  const messages: Message[] = [];
  let fact = 0;
  for (let index = 0; index < messageCount; index += 1) {
    const timestamp = day + 8 * 3_600_000 + index * 60_000;
    if (messages.length >= (fact * messageCount) / facts && fact < facts) {
      fact += 1;
      messages.push(
        createMessage({
          role: "user",
          content: `Please remember FACT-K${fact} : the staging database for project ${fact} moved to host db-${fact}.internal on port ${5400 + fact}.`,
          timestamp,
        }),
      );
    } else if (index % 3 === 0) {
      const id = `call_${index}`;
      messages.push(
        createMessage({
          role: "assistant",
          content: [
            {
              type: "tool_call",
              id,
              name: "read_file",
              arguments: JSON.stringify({ path: `notes/${index}.md` }),
            },
          ],
          timestamp,
        }),
        createMessage({
          role: "tool",
          content: [{ type: "tool_result", callId: id, content: `line ${index} of the notes `.repeat(60) }],
          timestamp,
        }),
      );
      index += 1;
    } else {
      messages.push(
        createMessage({
          role: index % 2 === 0 ? "user" : "assistant",
          content: `Message ${index}: we went over the deployment checklist again and agreed to look at the logs tomorrow morning before the standup.`,
          timestamp,
        }),
      );
    }
  }
  return messages;
}

/** Largest (prompt + requested completion) / window over the server's accepted requests. */
function largestShare(server: ScriptedLlm, window: number): number {
  return Math.max(
    ...server
      .chatRequests()
      .map((request) => ((request.promptTokens ?? 0) + Number(request.max_tokens ?? 0)) / window),
  );
}

describe("the summarizer sized from the model's window", () => {
  it("merges a day of ≈7,900 transcript tokens into an 8,192-token model without one refused request, every fact kept", async () => {
    const { llm, queue, logPath } = await setUp(8_192, 4_096);
    const messages = toolHeavyDay(160, 20);
    const transcriptTokens = renderTranscript(messages, "UTC").reduce(
      (sum, entry) => sum + counter.countText(entry) + 1,
      0,
    );
    expect(transcriptTokens).toBeGreaterThan(7_000);
    expect(transcriptTokens).toBeLessThan(8_000);
    await queue.enqueue({ sessionKey: "web:local:dm:ann", reason: "new-session", messages, createdAt: day });
    await queue.start();
    await queue.idle();

    expect(llm.rejections()).toEqual([]);
    expect((await queue.list())[0]?.state).toBe("done");
    const log = await readFile(logPath, "utf8");
    for (let fact = 1; fact <= 20; fact += 1) expect(log).toContain(`FACT-K${fact} `);
    expect(largestShare(llm, 8_192)).toBeLessThanOrEqual(1);
    // Every step carried the output cap (at most a quarter of the window).
    expect(new Set(llm.chatRequests().map((request) => request.max_tokens))).toEqual(new Set([2_048]));
  });

  it("splits a part the provider refuses as too long in two and merges both halves; the job is not parked", async () => {
    const { llm, queue, logPath } = await setUp(32_000, 1_024);
    llm.enqueue(
      script.error(400, {
        code: "context_length_exceeded",
        message:
          "This model's maximum context length is 4000 tokens. However, your messages resulted in 4100 tokens.",
      }),
    );
    const messages = toolHeavyDay(40, 4);
    await queue.enqueue({ sessionKey: "web:local:dm:ann", reason: "auto", messages, createdAt: day });
    await queue.start();
    await queue.idle();

    const [job] = await queue.list();
    expect(job?.state).toBe("done");
    expect(job?.attempts).toBe(1);
    const log = await readFile(logPath, "utf8");
    for (let fact = 1; fact <= 4; fact += 1) expect(log.split(`FACT-K${fact} `)).toHaveLength(2);
    const firstInputs = llm
      .chatRequests()
      .filter((request) => request.messages.length === 2)
      .map((request) => String(request.messages[1]?.content));
    expect(firstInputs).toHaveLength(3); // the refused whole, then its two halves
    expect(firstInputs[1]).toContain("part 1 of 2");
    expect(firstInputs[2]).toContain("part 2 of 2");
  });

  it("reads a huge day log through a bounded view and appends to it, never overflowing and never dropping it", async () => {
    const { llm, queue, logPath } = await setUp(8_192, 1_024);
    const old = [
      "# 2024-05-01",
      ...Array.from(
        { length: 900 },
        (_, index) => `- 07:${index % 60} old entry ${index} about the release train`,
      ),
    ].join("\n");
    await writeFile(logPath, `${old}\n`);
    expect(counter.countText(old)).toBeGreaterThan(8_192);
    const messages = toolHeavyDay(30, 3);
    await queue.enqueue({ sessionKey: "web:local:dm:ann", reason: "auto", messages, createdAt: day });
    await queue.start();
    await queue.idle();

    expect(llm.rejections()).toEqual([]);
    expect((await queue.list())[0]?.state).toBe("done");
    const log = await readFile(logPath, "utf8");
    expect(log.startsWith(`${old}\n`)).toBe(true);
    for (let fact = 1; fact <= 3; fact += 1) expect(log).toContain(`FACT-K${fact} `);
    expect(largestShare(llm, 8_192)).toBeLessThanOrEqual(1);
  });
});

describe("summarizer budget helpers", () => {
  it("cuts an entry longer than a part into marked pieces that each fit", () => {
    const entry = `[09:00] user: ${"数据库迁移计划 ".repeat(600)}`;
    const pieces = splitEntry(entry, 500, counter);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces) expect(counter.countText(piece)).toBeLessThanOrEqual(500);
    expect(pieces[1]?.startsWith("(continued) ")).toBe(true);
  });

  it("lightens a conversation: earlier reads and applied writes give way to short notes, the latest read stays", () => {
    const call = (id: string, name: string, args: object) =>
      createMessage({
        role: "assistant",
        content: [{ type: "tool_call", id, name, arguments: JSON.stringify(args) }],
      });
    const result = (id: string, content: string) =>
      createMessage({ role: "tool", content: [{ type: "tool_result", callId: id, content }] });
    const messages = [
      createMessage({ role: "user", content: "merge this" }),
      call("r1", "read_day_log", {}),
      result("r1", "old log ".repeat(200)),
      call("a1", "append_day_log", { text: "- new bullet ".repeat(50) }),
      result("a1", "Appended."),
      call("r2", "read_day_log", {}),
      result("r2", "latest log"),
    ];
    const lightened = lightenConversation(messages);
    expect(counter.countMessages(lightened)).toBeLessThan(counter.countMessages(messages) / 3);
    expect(lightened.at(-1)).toBe(messages.at(-1));
    expect(lightenConversation(lightened)).toBe(lightened);
  });
});
