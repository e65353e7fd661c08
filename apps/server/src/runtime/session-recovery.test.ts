import { createMessage, type Message } from "@almanac/core";
import { createRecordingLogger, type LogEntry } from "@almanac/testkit";
import { describe, expect, it } from "vitest";
import { CHECKPOINT_TURNS } from "./session-checkpoint.js";
import { recoverFromTranscript } from "./session-recovery.js";

/** A transcript of `turns` question-and-answer turns, a second apart from `start`. */
function transcript(turns: number, start = 1_000_000): Message[] {
  return Array.from({ length: turns }, (_, turn) => [
    createMessage({ role: "user", content: `question ${turn}`, timestamp: start + turn * 1000 }),
    createMessage({ role: "assistant", content: `answer ${turn}`, timestamp: start + turn * 1000 + 500 }),
  ]).flat();
}

const recover = (snapshot: Parameters<typeof recoverFromTranscript>[0]["snapshot"], messages: Message[]) => {
  const entries: LogEntry[] = [];
  const state = recoverFromTranscript({
    key: "api:default:api:young",
    channel: undefined,
    snapshot,
    transcript: messages,
    now: 5_000_000,
    logger: createRecordingLogger(entries),
  });
  return { state, entries };
};

describe("a session rebuilt from its transcript", () => {
  it("is expected, and logged as information, for a young session whose first snapshot was not due yet", () => {
    const { state, entries } = recover({ status: "missing" }, transcript(CHECKPOINT_TURNS - 1));
    expect(state).toMatchObject({ fromTranscript: true, createdAt: 1_000_000 });
    expect(state.stats).toMatchObject({ turns: CHECKPOINT_TURNS - 1, channel: "api" });
    expect(state.memory.messages).toHaveLength((CHECKPOINT_TURNS - 1) * 2);
    expect(entries.map(({ level }) => level)).toEqual(["info"]);
  });

  it("is warned about when an older session's snapshot is missing, or any session's was moved aside", () => {
    expect(
      recover({ status: "missing" }, transcript(CHECKPOINT_TURNS)).entries.map(({ level }) => level),
    ).toEqual(["warn"]);
    const movedAside = {
      status: "corrupt",
      reason: "invalid JSON",
      movedTo: "/tmp/x.corrupt-1.json",
    } as const;
    expect(recover(movedAside, transcript(1)).entries).toEqual([
      expect.objectContaining({ level: "warn", message: "rebuilding session from its transcript" }),
    ]);
  });

  it("starts a new, empty session when there is no transcript, without a word", () => {
    const { state, entries } = recover({ status: "missing" }, []);
    expect(state).toMatchObject({ fromTranscript: false, createdAt: 5_000_000 });
    expect(entries).toEqual([]);
  });
});
