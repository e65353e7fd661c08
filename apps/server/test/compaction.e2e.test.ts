import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { summarySections } from "@almanac/compaction";
import { formatSessionKey, sessionKeyToFileStem } from "@almanac/core";
import { script } from "@almanac/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { isSummarizerRequest, readTranscriptLines, startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const summary = (note: string) =>
  summarySections.map((heading) => `## ${heading}\n${heading === "Done" ? note : "None."}`).join("\n\n");

const isSummarizer = isSummarizerRequest;

describe("compaction in the running server", () => {
  it("keeps a tool-heavy conversation inside a small window: no rejections, a rolling summary, a complete transcript", async () => {
    const window = 8192;
    running = await startTestServer({
      contextWindow: window,
      env: {
        ALMANAC_COMPACTION_MODEL: "compactor",
        ALMANAC_MEMORY_CONTEXT_TOKENS: "200",
      },
    });
    const workspace = join(running.home, "workspace");
    await mkdir(workspace, { recursive: true });
    for (let index = 0; index < 5; index += 1) {
      const lines = Array.from(
        { length: 300 },
        (_, line) => `report ${index} line ${line}: throughput ${line * 7} ops/s, host web-${line % 9}`,
      );
      await writeFile(join(workspace, `report-${index}.txt`), lines.join("\n"));
    }
    let summaries = 0;
    running.llm.setFallback((request) => {
      if (request.model === "compactor") {
        summaries += 1;
        return script.text(summary(`Read reports up to summary ${summaries}.`));
      }
      if (isSummarizer(request)) return script.text("Nothing worth storing.");
      const last = request.messages.at(-1);
      if (last?.role === "user") {
        const match = /report (\d)/.exec(String(last.content));
        return script.toolCalls([
          { name: "read_file", arguments: { path: `report-${match?.[1] ?? 0}.txt` } },
        ]);
      }
      return script.text("Read it; throughput looks stable.");
    });
    const replies: string[] = [];
    for (let turn = 0; turn < 30; turn += 1) {
      const reply = await running.client.chat.completions.create({
        model: "almanac",
        user: "heavy",
        messages: [
          { role: "user", content: `Please read report ${turn % 5} and tell me about it (turn ${turn}).` },
        ],
      });
      replies.push(reply.choices[0]?.message.content ?? "");
    }
    expect(running.llm.rejections()).toEqual([]);
    expect(summaries).toBeGreaterThan(0);
    expect(replies.some((reply) => reply.includes("Context compacted:"))).toBe(true);
    // After the first summary, every chat request carries the rolling summary as background.
    const chat = running.llm
      .chatRequests()
      .filter((request) => request.model === "scripted-model" && !isSummarizer(request));
    const firstWithSummary = chat.findIndex((request) =>
      String(request.messages[0]?.content).includes("<conversation-summary>"),
    );
    expect(firstWithSummary).toBeGreaterThan(0);
    for (const request of chat.slice(firstWithSummary)) {
      expect(String(request.messages[0]?.content)).toContain("<conversation-summary>");
    }
    // Nothing said is lost: every user message and every full tool output is in the transcript.
    const stem = sessionKeyToFileStem(
      formatSessionKey({ channel: "api", account: "default", kind: "api", id: "heavy" }),
    );
    const transcript = await readTranscriptLines(running.home, stem);
    expect(transcript.filter((line) => line.role === "user")).toHaveLength(30);
    const status = await running.client.chat.completions.create({
      model: "almanac",
      user: "heavy",
      messages: [{ role: "user", content: "/status" }],
    });
    expect(status.choices[0]?.message.content).toMatch(/compactions: [1-9]/);
    const jobs = (await (await running.api("/api/summarizer/jobs")).json()) as {
      jobs: Array<{ reason: string }>;
    };
    expect(jobs.jobs.some((job) => job.reason === "auto")).toBe(true);
  }, 120_000);

  it("/compact summarizes on request and says so", async () => {
    running = await startTestServer({ env: { ALMANAC_COMPACTION_MODEL: "compactor" } });
    running.llm.setFallback((request) => {
      if (request.model === "compactor") return script.text(summary("Talked about the garden."));
      if (isSummarizer(request)) return script.text("Nothing worth storing.");
      return script.text("Sure.");
    });
    for (let turn = 0; turn < 8; turn += 1) {
      await running.client.chat.completions.create({
        model: "almanac",
        user: "manual",
        messages: [{ role: "user", content: `garden note ${turn}` }],
      });
    }
    const reply = await running.client.chat.completions.create({
      model: "almanac",
      user: "manual",
      messages: [{ role: "user", content: "/compact the garden" }],
    });
    expect(reply.choices[0]?.message.content).toMatch(/Compacted \d+ messages into the rolling summary/);
    const summaryRequest = running.llm.chatRequests().find((request) => request.model === "compactor");
    expect(JSON.stringify(summaryRequest?.messages)).toContain("the garden");
  });
});
