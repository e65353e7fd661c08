import { hasMark, type Message } from "@almanac/core";
import { ModelError } from "@almanac/llm";
import { type ScriptedLlm, startScriptedLlm } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createScriptedSession, RecordingMemory, routeRequests } from "../test/scripted-session.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  toolRound,
  user,
} from "../test/transcripts.js";
import { isContextLengthError, runWithOverflowRecovery } from "./overflow-recovery.js";

describe("runWithOverflowRecovery", () => {
  const overflow = () => new ModelError("context_length", "too long", { status: 400 });

  it("compacts and retries after a context-length error, for every step that overflows", async () => {
    const calls: string[] = [];
    let attempts = 0;
    let tokens = 9_000;
    const result = await runWithOverflowRecovery(
      async () => {
        attempts += 1;
        calls.push(`run ${attempts}`);
        if (attempts <= 3) throw overflow();
        return "answer";
      },
      async () => {
        calls.push("compact");
        tokens -= 1_000;
        return { tokensBefore: tokens + 1_000, tokensAfter: tokens };
      },
    );
    expect(result).toBe("answer");
    expect(calls).toEqual(["run 1", "compact", "run 2", "compact", "run 3", "compact", "run 4"]);
  });

  it("gives up when a compaction could not shrink the prompt, and lets any other error through", async () => {
    let compactions = 0;
    const compact = async () => {
      compactions += 1;
      return compactions === 1
        ? { tokensBefore: 9_000, tokensAfter: 5_000 }
        : { tokensBefore: 5_000, tokensAfter: 5_000 };
    };
    await expect(
      runWithOverflowRecovery(async () => Promise.reject(overflow()), compact),
    ).rejects.toMatchObject({
      code: "llm.context_length",
    });
    expect(compactions).toBe(2);
    await expect(
      runWithOverflowRecovery(async () => Promise.reject(new ModelError("rate_limit", "slow down")), compact),
    ).rejects.toMatchObject({ code: "llm.rate_limit" });
    expect(compactions).toBe(2);
  });

  it("stops after a bounded number of recoveries even when every compaction shrinks the prompt", async () => {
    let compactions = 0;
    await expect(
      runWithOverflowRecovery(
        async () => Promise.reject(overflow()),
        async () => {
          compactions += 1;
          return { tokensBefore: 2, tokensAfter: 1 };
        },
      ),
    ).rejects.toMatchObject({ code: "llm.context_length" });
    expect(compactions).toBe(16);
  });

  it("recognizes the error by its code, not by class", () => {
    expect(isContextLengthError(overflow())).toBe(true);
    expect(isContextLengthError(new Error("maximum context length"))).toBe(false);
  });
});

describe("emergency compaction against the strict scripted server", () => {
  let llm: ScriptedLlm;
  beforeEach(async () => {
    llm = await startScriptedLlm({ contextWindow: 16_384 });
  });
  afterEach(async () => {
    await llm.close();
  });

  it("recovers when the provider refuses a prompt our settings thought would fit", async () => {
    routeRequests(llm);
    // Misconfigured on purpose: the compactor believes in a 64K window, the server enforces 16K.
    const session = createScriptedSession(llm, { contextWindow: 65_536 });
    const clock = createTestClock();
    const random = createRandom(5);
    const history: Message[] = [];
    for (let turn = 0; turn < 12; turn += 1) {
      history.push(user(`turn ${turn}`, clock));
      history.push(
        ...toolRound(
          [{ name: "fetch_report", arguments: { id: turn }, output: generatedText(random, 6_000) }],
          clock,
        ),
      );
      history.push(assistant("ok", clock));
    }
    const memory = new RecordingMemory({ messages: history });
    memory.append(user("What about report 77?", clock));
    const systemPrompt = "You are Almanac. Use fetch_report to answer.";

    const result = await runWithOverflowRecovery(
      () => session.agent.run({ memory }),
      () => session.compactor.compact(memory, { systemPrompt, tools: [], reason: "overflow" }),
    );

    expect(result.stopReason).toBe("final");
    expect(llm.rejections().map((request) => request.rejected?.code)).toEqual(["context_length_exceeded"]);
    expect(session.events).toContainEqual(
      expect.objectContaining({ type: "compaction-end", reason: "overflow", outcome: "summarized" }),
    );
    expect(memory.messages.filter((message) => hasMark(message, "compacted")).length).toBeGreaterThan(0);
    expect(memory.appended.filter((id) => id.startsWith("user-"))).toHaveLength(1);
  });
});
