import { hasMark } from "@almanac/core";
import { type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createScriptedSession, RecordingMemory, routeRequests } from "../test/scripted-session.js";
import { user } from "../test/transcripts.js";
import type { CompactionEndEvent } from "./compaction-events.js";
import { compactionCounters } from "./compactor.js";
import { runWithOverflowRecovery } from "./overflow-recovery.js";

const turns = 1_000;
const systemPrompt = "You are Almanac. Use fetch_report to answer.";

let llm: ScriptedLlm;

beforeEach(async () => {
  llm = await startScriptedLlm({ contextWindow: 16_384 });
});

afterEach(async () => {
  await llm.close();
});

describe("a 1,000-turn tool-heavy conversation in a 16K window (scripted server)", () => {
  it("never overflows, never breaks a tool pair, keeps a summary and loses no message", {
    timeout: 120_000,
  }, async () => {
    const log = routeRequests(llm);
    const session = createScriptedSession(llm);
    const memory = new RecordingMemory();
    let summarizedOnce = false;

    for (let turn = 1; turn <= turns; turn += 1) {
      const result = await runWithOverflowRecovery(
        () =>
          session.agent.run({
            memory,
            input: user(`Turn ${turn}: what does the next report say? 请总结。`, session.clock),
          }),
        () => session.compactor.compact(memory, { systemPrompt, tools: [], reason: "overflow" }),
      );
      expect(result.stopReason).toBe("final");
      if (memory.summary !== undefined) summarizedOnce = true;
      if (summarizedOnce) expect(memory.summary?.text).toContain("## Goal");
      if (turn % 100 === 0) {
        // Check and drop the server's records now and then, so 2,000+ request bodies are not all kept.
        expect(llm.rejections()).toEqual([]);
        llm.reset();
        routeRequests(llm, {}, log);
      }
    }

    const ends = session.events.filter(
      (event): event is CompactionEndEvent => event.type === "compaction-end",
    );
    const summarized = ends.filter((event) => event.outcome === "summarized");
    expect(ends.filter((event) => event.outcome === "failed")).toEqual([]);
    expect(ends.filter((event) => "reason" in event && event.reason === "overflow")).toEqual([]);
    expect(summarized.length).toBeGreaterThan(0);
    expect(summarizedOnce).toBe(true);
    expect(log.mainRequests).toBe(2 * turns);
    expect(log.mainWithoutSummary).toBe(0);
    expect(memory.counter(compactionCounters.count)).toBe(summarized.length);
    expect(memory.counter(compactionCounters.strikes)).toBe(0);

    // Every message ever appended is in the transcript: journaled, or still in memory.
    const journaled = new Set(
      session.batches.flatMap((batch) => batch.messages.map((message) => message.id)),
    );
    const inMemory = new Set(memory.messages.map((message) => message.id));
    const missing = memory.appended.filter((id) => !journaled.has(id) && !inMemory.has(id));
    expect(memory.appended).toHaveLength(4 * turns);
    expect(missing).toEqual([]);
    // The journal got each message as it was appended, not the shortened form the prompt used.
    const altered = session.batches
      .flatMap((batch) => batch.messages)
      .filter((message) => message !== memory.originals.get(message.id));
    expect(altered).toEqual([]);
    expect(memory.messages.filter((message) => hasMark(message, "compacted")).length).toBeLessThanOrEqual(
      200 + 4,
    );
    console.info(
      `1,000 turns: ${summarized.length} summarizing compactions, ${ends.length - summarized.length} cheap-only, ` +
        `${log.summaryRequests} summary requests`,
    );
  });
});
