import { mkdir, mkdtemp, readFile, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "@almanac/core";
import { afterEach, describe, expect, it } from "vitest";
import { createEventBus } from "../events/event-bus.js";
import { recordServerEvents } from "./record-server-events.js";
import { createStatsJournal, lastLocalDates } from "./stats-journal.js";

const DAY = 86_400_000;
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function journalAt(now: { value: number }) {
  dir = await mkdtemp(join(tmpdir(), "almanac-stats-"));
  return createStatsJournal({ dir, timeZone: "UTC", logger: silentLogger, clock: () => now.value });
}

describe("stats journal", () => {
  it("sums usage per local day and model, with empty days in the range", async () => {
    const now = { value: Date.UTC(2026, 0, 10, 12) };
    const journal = await journalAt(now);
    journal.recordUsage("big", { promptTokens: 100, completionTokens: 10 });
    now.value -= 2 * DAY;
    journal.recordUsage("big", { promptTokens: 50, completionTokens: 5 });
    journal.recordUsage("small", { promptTokens: 7, completionTokens: 1 });
    now.value += 2 * DAY;
    const days = await journal.usageByDay(3);
    expect(days).toEqual([
      {
        date: "2026-01-08",
        models: {
          big: { promptTokens: 50, completionTokens: 5, calls: 1 },
          small: { promptTokens: 7, completionTokens: 1, calls: 1 },
        },
      },
      { date: "2026-01-09", models: {} },
      { date: "2026-01-10", models: { big: { promptTokens: 100, completionTokens: 10, calls: 1 } } },
    ]);
  });

  it("writes records made together in one append each file, in order, and makes a removed folder again", async () => {
    const now = { value: Date.UTC(2026, 0, 10, 12) };
    const journal = await journalAt(now);
    for (let call = 1; call <= 50; call += 1)
      journal.recordUsage("big", { promptTokens: call, completionTokens: 1 });
    await journal.flush();
    const file = join(dir as string, "usage-2026-01-10.jsonl");
    const lines = (await readFile(file, "utf8")).trimEnd().split("\n");
    expect(lines.map((line) => JSON.parse(line).promptTokens)).toEqual(
      Array.from({ length: 50 }, (_, index) => index + 1),
    );
    await rm(dir as string, { recursive: true, force: true });
    journal.recordUsage("big", { promptTokens: 7, completionTokens: 1 }); // fails: the folder is gone
    await journal.flush();
    journal.recordUsage("big", { promptTokens: 8, completionTokens: 1 });
    await journal.flush();
    expect(await journal.usageByDay(1)).toEqual([
      { date: "2026-01-10", models: { big: { promptTokens: 8, completionTokens: 1, calls: 1 } } },
    ]);
  });

  it("never makes a vanished data directory again: the points are lost, the directory stays gone", async () => {
    dir = await mkdtemp(join(tmpdir(), "almanac-stats-home-"));
    const home = join(dir, "home");
    const statsDir = join(home, "state", "stats");
    const journal = createStatsJournal({ dir: statsDir, timeZone: "UTC", logger: silentLogger });
    await mkdir(join(home, "state"), { recursive: true });
    journal.recordUsage("big", { promptTokens: 1, completionTokens: 1 });
    await journal.flush();
    await rename(home, `${home}.moved`);
    for (let call = 0; call < 2; call += 1) {
      journal.recordUsage("big", { promptTokens: 2, completionTokens: 1 });
      await journal.flush();
    }
    await expect(stat(home)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("keeps a session's turns in order across rounds of writes, in a file only its owner can read", async () => {
    const now = { value: Date.UTC(2026, 0, 10, 12) };
    const journal = await journalAt(now);
    const turn = (index: number) => ({
      sessionKey: "api:default:api:new",
      turn: index,
      at: now.value + index,
      contextTokens: 10,
      promptTokens: 5,
      completionTokens: 1,
    });
    journal.recordTurn(turn(1));
    await journal.flush();
    journal.recordTurn(turn(2));
    journal.recordTurn(turn(3));
    await journal.flush();
    const { turns } = await journal.sessionHistory("api:default:api:new");
    expect(turns.map((record) => record.turn)).toEqual([1, 2, 3]);
    const { readdir, stat } = await import("node:fs/promises");
    const [file] = await readdir(join(dir ?? "", "sessions"));
    expect((await stat(join(dir ?? "", "sessions", file ?? ""))).mode & 0o777).toBe(0o600);
  });

  it("counts days in the configured time zone", () => {
    // 23:30 UTC on the 10th is already the 11th in Shanghai.
    expect(lastLocalDates(2, Date.UTC(2026, 0, 10, 23, 30), "Asia/Shanghai")).toEqual([
      "2026-01-10",
      "2026-01-11",
    ]);
  });

  it("keeps the last memory sample of each day and skips unchanged ones", async () => {
    const now = { value: Date.UTC(2026, 0, 10, 8) };
    const journal = await journalAt(now);
    await journal.sampleMemory({ files: 1, chunks: 2 });
    await journal.sampleMemory({ files: 1, chunks: 2 });
    now.value += 3_600_000;
    await journal.sampleMemory({ files: 2, chunks: 5, embeddedChunks: 5 });
    now.value += DAY;
    await journal.sampleMemory({ files: 3, chunks: 9 });
    const samples = await journal.memorySamples(30);
    expect(samples.map(({ date, files, chunks }) => ({ date, files, chunks }))).toEqual([
      { date: "2026-01-10", files: 2, chunks: 5 },
      { date: "2026-01-11", files: 3, chunks: 9 },
    ]);
  });
});

describe("recording server events", () => {
  it("records turns, compactions and resets without counting as someone watching", async () => {
    const now = { value: Date.UTC(2026, 0, 10) };
    const journal = await journalAt(now);
    const bus = createEventBus();
    const watching: number[] = [];
    bus.onListenerCount((count) => watching.push(count));
    const stop = recordServerEvents(bus, journal, () => now.value);
    expect(watching).toEqual([]);
    expect(bus.active).toBe(true);
    const turn = (turns: number, contextTokens: number) =>
      bus.publish({
        type: "turn-finished",
        sessionKey: "web:default:web:a",
        channel: "web",
        kind: "reply",
        outcome: "ok",
        durationMs: 5,
        usage: { promptTokens: contextTokens, completionTokens: 3 },
        session: { messageCount: 2, contextTokens, turns, compactions: 0, lastActivity: now.value },
      });
    turn(1, 100);
    turn(2, 200);
    bus.publish({
      type: "session-compacted",
      sessionKey: "web:default:web:a",
      reason: "auto",
      tokensBefore: 200,
      tokensAfter: 50,
    });
    turn(3, 90);
    expect(
      (await journal.sessionHistory("web:default:web:a")).turns.map((entry) => entry.contextTokens),
    ).toEqual([100, 200, 90]);
    expect((await journal.sessionHistory("web:default:web:a")).compactions).toHaveLength(1);
    bus.publish({ type: "session-reset", sessionKey: "web:default:web:a" });
    expect(await journal.sessionHistory("web:default:web:a")).toEqual({ turns: [], compactions: [] });
    turn(1, 40);
    expect((await journal.sessionHistory("web:default:web:a")).turns.map((entry) => entry.turn)).toEqual([1]);
    stop();
    expect(bus.active).toBe(false);
    expect(watching).toEqual([]);
  });
});
