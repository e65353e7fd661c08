import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { script } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFixture, type Fixture, ManualClock, until } from "../test/fixture.js";

let fixture: Fixture;

beforeEach(async () => {
  fixture = await createFixture();
});

afterEach(async () => {
  await fixture.close();
});

/** Noon in Paris on 2026-12-01 (UTC+1 in winter). */
const NOON = Date.UTC(2026, 11, 1, 11, 0);
/** 03:30 in Paris on 2026-12-02. */
const NEXT_NIGHT = Date.UTC(2026, 11, 2, 2, 30);
const DAY = 86_400_000;

describe("Consolidator schedule", () => {
  it("runs nightly at the configured local time, and says when it runs next", async () => {
    await fixture.write("memory/2026-12-01.md", "# 2026-12-01\n- 10:00 Adopted a dog called Rex.\n");
    const clock = new ManualClock(NOON);
    const consolidator = fixture.consolidator({ clock, at: "03:30", timeZone: "Europe/Paris" });
    await consolidator.start();
    // A fresh workspace is not consolidated at start: its first run is the next night.
    expect(await consolidator.status()).toMatchObject({
      schedule: { at: "03:30", timeZone: "Europe/Paris" },
      nextRunAt: NEXT_NIGHT,
      runs: [],
    });

    fixture.llm.enqueue(
      script.toolCalls([
        { name: "add_to_memory", arguments: { text: "- Has a dog called Rex", heading: "About me" } },
      ]),
      script.text("Added the dog."),
    );
    await clock.advanceTo(NEXT_NIGHT - 1);
    expect((await consolidator.status()).runs).toEqual([]);
    await clock.advanceTo(NEXT_NIGHT);
    await until(async () => (await consolidator.status()).runs.length > 0, "the nightly run");
    await consolidator.whenIdle();

    const status = await consolidator.status();
    expect(status.runs).toMatchObject([{ trigger: "schedule", state: "done" }]);
    expect(status.nextRunAt).toBe(NEXT_NIGHT + DAY);
    expect(await fixture.read("MEMORY.md")).toBe("# Memory\n\n## About me\n- Has a dog called Rex\n");
    expect(await fixture.read("memory/2026-12-02.md")).toContain("- 03:30 Consolidated memory: 1 change");
  });

  it("a stop right after the start waits for the start's journal writes: nothing is written after it", async () => {
    const consolidator = fixture.consolidator({ clock: new ManualClock(NOON), at: "03:30" });
    const starting = consolidator.start();
    await consolidator.stop();
    const journal = join(fixture.stateDir, "consolidation", "state.json");
    const written = await stat(journal);
    await starting;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await stat(journal)).mtimeMs).toBe(written.mtimeMs);
  });

  it("does not make a vanished state directory again at start: the start fails and says so", async () => {
    const consolidator = fixture.consolidator({ clock: new ManualClock(NOON), at: "03:30" });
    await rm(fixture.stateDir, { recursive: true });
    await expect(consolidator.start()).rejects.toMatchObject({ code: "ENOENT" });
    await expect(stat(fixture.stateDir)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("catches up once on a night missed while the server was down", async () => {
    const clock = new ManualClock(NOON);
    const first = fixture.consolidator({ clock, at: "03:30", timeZone: "Europe/Paris" });
    await first.start();
    await first.stop();

    // Down for three nights; the logs of those days are there when it comes back.
    await fixture.write(
      "memory/2026-12-03.md",
      "# 2026-12-03\n- 18:00 Started a pottery class on Thursdays.\n",
    );
    fixture.llm.enqueue(
      script.toolCalls([
        { name: "add_to_memory", arguments: { text: "- Pottery class on Thursdays", heading: "Hobbies" } },
      ]),
      script.text("Added the class."),
    );
    const later = new ManualClock(NOON + 3 * DAY);
    const second = fixture.consolidator({ clock: later, at: "03:30", timeZone: "Europe/Paris" });
    await second.start();
    await second.whenIdle();
    expect((await second.status()).runs).toMatchObject([{ trigger: "schedule", state: "done" }]);
    expect(await fixture.read("MEMORY.md")).toContain("- Pottery class on Thursdays");
  });

  it("retries a failed run with backoff, showing the failure meanwhile", async () => {
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Switched to night shifts.\n");
    fixture.llm.enqueue(script.error(500, { message: "upstream down" }));
    const clock = new ManualClock(NOON);
    const consolidator = fixture.consolidator({ clock, backoff: (attempt) => attempt * 60_000 });
    await consolidator.start();
    const run = await consolidator.request("request");
    await consolidator.whenIdle();

    const failed = (await consolidator.status()).runs[0];
    expect(failed).toMatchObject({
      id: run.id,
      state: "pending",
      attempts: 1,
      nextAttemptAt: NOON + 60_000,
      lastError: { code: "llm.server", retryable: true },
    });

    fixture.llm.enqueue(
      script.toolCalls([
        { name: "add_to_memory", arguments: { text: "- Works night shifts", heading: "Work" } },
      ]),
      script.text("Added."),
    );
    await clock.advanceTo(NOON + 60_000);
    await consolidator.whenIdle();
    expect((await consolidator.status()).runs[0]).toMatchObject({ id: run.id, state: "done", attempts: 2 });
    expect(await fixture.read("MEMORY.md")).toContain("- Works night shifts");
  });

  it("gives up after its attempts and keeps the failure visible; a request asks for a new run", async () => {
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Switched to night shifts.\n");
    fixture.llm.enqueue(script.error(401, { message: "bad key" }));
    const consolidator = fixture.consolidator({ clock: new ManualClock(NOON) });
    await consolidator.start();
    const failed = await consolidator.request("request");
    await consolidator.whenIdle();
    expect((await consolidator.status()).runs[0]).toMatchObject({
      id: failed.id,
      state: "failed",
      attempts: 1,
      lastError: { code: "llm.auth", retryable: false },
    });

    fixture.llm.enqueue(script.text("Nothing lasting."));
    const next = await consolidator.request("request");
    await consolidator.whenIdle();
    expect(next.id).not.toBe(failed.id);
    expect((await consolidator.status()).runs.map((run) => run.state)).toEqual(["done", "failed"]);
  });

  it("runs one at a time: a request while a run is waiting joins it", async () => {
    await fixture.write("memory/2026-11-30.md", "# 2026-11-30\n- 09:00 Switched to night shifts.\n");
    fixture.llm.enqueue(script.text("Nothing lasting.", { delayMs: 200 }));
    const consolidator = fixture.consolidator({ clock: new ManualClock(NOON) });
    const first = await consolidator.request("request");
    const second = await consolidator.request("request");
    expect(second.id).toBe(first.id);
    await consolidator.start();
    // Asked while the first one runs: a second run follows it.
    const third = await consolidator.request("request");
    expect(third.id).not.toBe(first.id);
    await consolidator.whenIdle();
    const runs = (await consolidator.status()).runs;
    expect(runs.map((run) => run.state)).toEqual(["done", "done"]);
    expect(fixture.llm.chatRequests()).toHaveLength(1);
  });
});
