import { describe, expect, it } from "vitest";
import {
  consolidationPhase,
  lastFinished,
  readConsolidation,
  readForgetReport,
  readForgotten,
  removedCount,
  runSummary,
} from "./memory-care-read.js";

const NOW = 1_800_000_000_000;

function status(runs: unknown[], fields: Record<string, unknown> = {}) {
  return readConsolidation({
    enabled: true,
    schedule: { at: "03:30", timeZone: "Europe/Berlin" },
    nextRunAt: NOW + 3_600_000,
    budgetTokens: 2000,
    running: null,
    runs,
    ...fields,
  });
}

function run(id: string, state: string, fields: Record<string, unknown> = {}) {
  return {
    id,
    seq: 1,
    trigger: "request",
    state,
    attempts: 1,
    createdAt: NOW - 60_000,
    updatedAt: NOW,
    ...fields,
  };
}

describe("reading a forget", () => {
  it("keeps each removed line with its file, and counts them", () => {
    const report = readForgetReport({
      phrase: "locker code",
      files: [
        { path: "MEMORY.md", removed: ["- Gym locker code 5521"] },
        { path: "memory/2026-01-02.md", removed: ["- 18:00 locker code 5521", "- locker code again"] },
        { path: "memory/empty.md", removed: [] },
      ],
      backupsKeptUntil: NOW,
    });
    expect(report.files.map((file) => file.path)).toEqual(["MEMORY.md", "memory/2026-01-02.md"]);
    expect(removedCount(report)).toBe(3);
    expect(report.backupsKeptUntil).toBe(NOW);
  });

  it("reads an answer of another shape as nothing removed", () => {
    const report = readForgetReport({ phrase: 3, files: "none" });
    expect(report).toEqual({ phrase: "", files: [], backupsKeptUntil: undefined });
    expect(removedCount(report)).toBe(0);
  });

  it("lists the forgotten phrases newest first", () => {
    const phrases = readForgotten({
      forgotten: [
        { phrase: "first", at: 1, by: "api", purgeBackupsAt: 10, purgedAt: 11 },
        { phrase: "second", at: 2, by: "console", purgeBackupsAt: 20 },
      ],
    });
    expect(phrases.map((entry) => entry.phrase)).toEqual(["second", "first"]);
    expect(phrases[1]?.purgedAt).toBe(11);
    expect(phrases[0]?.purgedAt).toBeUndefined();
  });
});

describe("consolidation's phase", () => {
  it("is off without a model, whatever the runs say", () => {
    const off = readConsolidation({
      enabled: false,
      schedule: null,
      nextRunAt: null,
      running: null,
      runs: [],
    });
    expect(off).toMatchObject({ enabled: false, at: null, nextRunAt: undefined, running: null });
    expect(consolidationPhase(off, NOW)).toBe("off");
  });

  it("is idle with no run yet, and with nightly runs off", () => {
    expect(consolidationPhase(status([]), NOW)).toBe("idle");
    const nightlyOff = status([], { schedule: { at: null, timeZone: "UTC" }, nextRunAt: null });
    expect(nightlyOff.at).toBeNull();
    expect(consolidationPhase(nightlyOff, NOW)).toBe("idle");
  });

  it("is running while a run works or one is due to start", () => {
    expect(consolidationPhase(status([run("2", "running")], { running: "2" }), NOW)).toBe("running");
    expect(consolidationPhase(status([run("2", "pending")]), NOW)).toBe("running");
    expect(consolidationPhase(status([run("2", "pending", { nextAttemptAt: NOW - 1 })]), NOW)).toBe(
      "running",
    );
  });

  it("is retrying while a failed attempt waits for its time", () => {
    const waiting = run("2", "pending", {
      attempts: 1,
      nextAttemptAt: NOW + 60_000,
      lastError: { code: "model.rate_limited", message: "Slow down", retryable: true, at: NOW },
    });
    expect(consolidationPhase(status([waiting, run("1", "done")]), NOW)).toBe("retrying");
  });

  it("is failed when the last finished run gave up, idle again once a later one is done", () => {
    const failed = run("1", "failed", {
      finishedAt: NOW,
      lastError: { code: "model.failed", message: "The model said no", retryable: false, at: NOW },
    });
    const failedStatus = status([failed]);
    expect(consolidationPhase(failedStatus, NOW)).toBe("failed");
    expect(lastFinished(failedStatus)?.lastError?.message).toBe("The model said no");
    expect(failedStatus.runs.map(runSummary)).toEqual(["failed: The model said no"]);
    expect(consolidationPhase(status([run("2", "done"), failed]), NOW)).toBe("idle");
  });

  it("says what the last run changed", () => {
    const done = status([
      run("3", "running"),
      run("2", "done", {
        outcome: { note: "ok", changes: ["added x", "moved y"], changedFiles: [], logs: [] },
      }),
      run("1", "done", { outcome: { note: "nothing", changes: [], changedFiles: [], logs: [] } }),
    ]);
    const last = lastFinished(done);
    expect(last?.id).toBe("2");
    expect(last?.changes).toEqual(["added x", "moved y"]);
    expect(done.runs.slice(1).map(runSummary)).toEqual(["2 changes", "no change"]);
  });
});
