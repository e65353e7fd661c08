import { hasMark, type Message } from "@almanac/core";
import { type ScriptedLlm, type ScriptStep, script, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createScriptedSession,
  mainModelName,
  RecordingMemory,
  routeRequests,
  summaryModelName,
} from "../test/scripted-session.js";
import { validSummary } from "../test/summary-fixtures.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  toolRound,
  user,
} from "../test/transcripts.js";
import type { CompactionEndEvent } from "./compaction-events.js";
import { runWithOverflowRecovery } from "./overflow-recovery.js";
import type { SummaryPath } from "./summarize.js";

let llm: ScriptedLlm;

beforeEach(async () => {
  llm = await startScriptedLlm({ contextWindow: 16_384 });
});

afterEach(async () => {
  await llm.close();
});

/** A long, finished history: after the cheap passes it is still over the 16K window's threshold. */
function history(): Message[] {
  const clock = createTestClock();
  const random = createRandom(3);
  const messages: Message[] = [];
  for (let turn = 0; turn < 110; turn += 1) {
    messages.push(user(`Question ${turn}: what does report ${turn} say about OPS-${4800 + turn}?`, clock));
    messages.push(
      ...toolRound(
        [{ name: "fetch_report", arguments: { id: turn }, output: generatedText(random, 1_200) }],
        clock,
      ),
    );
    messages.push(assistant(`Report ${turn} says it is fine.`, clock));
  }
  return messages;
}

function summarizedEnd(events: readonly { type: string }[]): CompactionEndEvent | undefined {
  return events.find(
    (event): event is CompactionEndEvent =>
      event.type === "compaction-end" && "summarizer" in event && event.summarizer !== "none",
  );
}

const cases: Array<{
  name: string;
  replies: Record<string, ScriptStep[]>;
  path: SummaryPath;
  timeoutMs?: number;
}> = [
  {
    name: "the compaction model times out, and the main model writes the summary",
    replies: { [summaryModelName]: [script.hang()] },
    path: "fallback",
    timeoutMs: 300,
  },
  {
    name: "the compaction model is rate limited (429), and the main model writes the summary",
    replies: { [summaryModelName]: [script.error(429)] },
    path: "fallback",
  },
  {
    name: "the compaction model answers 500 and the main model 429, so the static summary is used",
    replies: { [summaryModelName]: [script.error(500)], [mainModelName]: [script.error(429)] },
    path: "static",
  },
  {
    name: "the compaction model answers malformed JSON and the main model an empty summary, so the static summary is used",
    replies: { [summaryModelName]: [script.malformed()], [mainModelName]: [script.text("")] },
    path: "static",
  },
  {
    name: "the compaction model answers with no choices and the main model without the sections, so the static summary is used",
    replies: {
      [summaryModelName]: [script.emptyChoices()],
      [mainModelName]: [script.text("All good, nothing to report. ".repeat(10))],
    },
    path: "static",
  },
  {
    name: "the compaction model answers a summary missing sections, and the main model writes a valid one",
    replies: { [summaryModelName]: [script.text(validSummary("- x").replace("## Decisions", "## Choices"))] },
    path: "fallback",
  },
];

describe("compaction when the summary models fail (scripted server)", () => {
  for (const testCase of cases) {
    it(`continues the conversation and loses nothing when ${testCase.name}`, async () => {
      const log = routeRequests(llm, testCase.replies);
      const session = createScriptedSession(
        llm,
        testCase.timeoutMs === undefined ? {} : { summaryTimeoutMs: testCase.timeoutMs },
      );
      const original = history();
      const memory = new RecordingMemory({ messages: original });

      const first = await session.agent.run({ memory, input: user("And report 999?", session.clock) });
      expect(first.stopReason).toBe("final");
      const end = summarizedEnd(session.events);
      expect(end).toMatchObject({ outcome: "summarized", summarizer: testCase.path });
      expect(end && "notice" in end ? end.notice : "").toMatch(/^Context compacted: /);
      expect(memory.summary?.text).toBeDefined();
      if (testCase.path === "static") {
        expect(memory.summary?.text).toContain("Static summary");
        expect(memory.summary?.text).toContain("fetch_report ×");
      } else {
        expect(memory.summary?.text).toContain("merged summary");
      }

      const second = await session.agent.run({
        memory,
        input: user("Thanks, one more: report 1000?", session.clock),
      });
      expect(second.stopReason).toBe("final");
      expect(llm.rejections()).toEqual([]);
      expect(log.mainWithoutSummary).toBe(0);

      const journaled = new Set(
        session.batches.flatMap((batch) => batch.messages.map((message) => message.id)),
      );
      const inMemory = new Set(memory.messages.map((message) => message.id));
      for (const id of [...original.map((message) => message.id), ...memory.appended]) {
        expect(journaled.has(id) || inMemory.has(id)).toBe(true);
      }
      for (const message of memory.messages) {
        if (hasMark(message, "compacted")) expect(journaled.has(message.id)).toBe(true);
      }
    });
  }

  it("marks nothing while the journal fails, and compacts once it works again", async () => {
    routeRequests(llm);
    let journalUp = false;
    const journaled: string[] = [];
    const session = createScriptedSession(llm, {
      journal: async (batch) => {
        if (!journalUp) throw new Error("queue unavailable");
        journaled.push(...batch.messages.map((message) => message.id));
      },
    });
    const memory = new RecordingMemory({ messages: history() });
    const compactNow = () =>
      session.compactor.compact(memory, {
        systemPrompt: "You are Almanac. Use fetch_report to answer.",
        tools: [],
        reason: "overflow",
      });

    await expect(
      runWithOverflowRecovery(
        () => session.agent.run({ memory, input: user("Still there?", session.clock) }),
        compactNow,
      ),
    ).rejects.toMatchObject({ code: "compaction.journal_failed" });
    expect(
      memory.messages.some((message) => hasMark(message, "compacted") || hasMark(message, "compressed")),
    ).toBe(false);
    expect(memory.summary).toBeUndefined();
    expect(session.events.filter((event) => event.type === "compaction-end")).toContainEqual(
      expect.objectContaining({ outcome: "failed", error: expect.stringContaining("queue unavailable") }),
    );

    journalUp = true;
    const result = await runWithOverflowRecovery(() => session.agent.run({ memory }), compactNow);
    expect(result.stopReason).toBe("final");
    expect(memory.summary).toBeDefined();
    const compacted = memory.messages.filter((message) => hasMark(message, "compacted"));
    expect(compacted.length).toBeGreaterThan(0);
    for (const message of compacted) expect(journaled).toContain(message.id);
  });
});
