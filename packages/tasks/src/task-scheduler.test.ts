import { appendFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { nextFireTimes, ScheduleError, scheduleFrom } from "./schedule.js";
import { type TaskClock, type TaskRunner, TaskScheduler } from "./task-scheduler.js";
import type { FiringRecord, TaskRecord } from "./task-types.js";

/** A clock moved by hand: timers fire when `advance` passes them. */
class FakeClock implements TaskClock {
  #now: number;
  #timers = new Map<number, { at: number; callback: () => void }>();
  #next = 1;
  constructor(start: number) {
    this.#now = start;
  }
  now(): number {
    return this.#now;
  }
  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#now + ms, callback });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  advance(ms: number): void {
    this.#now += ms;
    for (const [id, timer] of [...this.#timers]) {
      if (timer.at <= this.#now) {
        this.#timers.delete(id);
        timer.callback();
      }
    }
  }
}

/** A runner that records turns and sends, and can be told to fail. */
class RecordingRunner implements TaskRunner {
  readonly turns: string[] = [];
  readonly sent: Array<{ sessionKey: string; text: string; key: string }> = [];
  failTurns = 0;
  failSends = 0;
  repeatable = true;
  reply: (task: TaskRecord, firing: FiringRecord) => string = (task, firing) =>
    `${firing.late ? "(late) " : ""}Done: ${task.instruction}`;
  async runTurn(task: TaskRecord, firing: FiringRecord): Promise<string> {
    this.turns.push(task.id);
    if (this.failTurns > 0) {
      this.failTurns -= 1;
      throw new Error("model down");
    }
    return this.reply(task, firing);
  }
  async deliver(task: TaskRecord, firing: FiringRecord, text: string): Promise<void> {
    if (this.failSends > 0) {
      this.failSends -= 1;
      throw new Error("platform down");
    }
    this.sent.push({ sessionKey: task.sessionKey, text, key: firing.id });
  }
  canRepeatSend(): boolean {
    return this.repeatable;
  }
}

const START = Date.parse("2026-12-06T08:00:00Z");
const SESSION = "discord:default:dm:42";
let dir: string;
let scheduler: TaskScheduler | undefined;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-tasks-"));
});
afterEach(async () => {
  await scheduler?.stop();
  scheduler = undefined;
  await rm(dir, { recursive: true, force: true });
});

function open(clock: FakeClock, runner: RecordingRunner, options: { graceMs?: number } = {}): TaskScheduler {
  scheduler = new TaskScheduler({
    file: join(dir, "journal.jsonl"),
    runner,
    clock,
    retryBaseMs: 1_000,
    isSilent: (text) => text.trim() === "[silent]",
    ...options,
  });
  return scheduler;
}

async function settle(clock: FakeClock, ms: number, tasks: TaskScheduler): Promise<void> {
  clock.advance(ms);
  await tasks.tick();
  await tasks.whenIdle();
}

describe("schedules", () => {
  it("reads local times, delays, cron and intervals, and refuses what cannot be used, saying what to send", () => {
    const now = START;
    expect(scheduleFrom({ in: "2h", timeZone: "UTC" }, now)).toEqual({ kind: "once", at: now + 7_200_000 });
    expect(scheduleFrom({ at: "2026-12-07T09:00", timeZone: "Asia/Shanghai" }, now)).toEqual({
      kind: "once",
      at: Date.parse("2026-12-07T01:00:00Z"),
    });
    expect(scheduleFrom({ every: "30 minutes", timeZone: "UTC" }, now)).toMatchObject({
      intervalMs: 1_800_000,
    });
    const problems = [
      { at: "2026-12-01T09:00", timeZone: "UTC" },
      { at: "next tuesday", timeZone: "UTC" },
      { cron: "61 * * * *", timeZone: "UTC" },
      { cron: "* * * * * *", timeZone: "UTC" },
      { every: "10s", timeZone: "UTC" },
      { in: "2h", timeZone: "Mars/Olympus" },
      { in: "2h", every: "1h", timeZone: "UTC" },
    ];
    for (const problem of problems) expect(() => scheduleFrom(problem, now)).toThrow(ScheduleError);
  });

  it("keeps a cron task at its local time across the daylight-saving changes in Europe/Berlin", () => {
    const schedule = scheduleFrom(
      { cron: "30 8 * * 1", timeZone: "Europe/Berlin" },
      Date.parse("2026-03-20T00:00:00Z"),
    );
    expect(
      nextFireTimes(schedule, Date.parse("2026-03-20T00:00:00Z"), 2).map((at) => new Date(at).toISOString()),
    ).toEqual([
      "2026-03-23T07:30:00.000Z", // CET, UTC+1
      "2026-03-30T06:30:00.000Z", // CEST, UTC+2: still 08:30 in Berlin
    ]);
    const autumn = nextFireTimes(schedule, Date.parse("2026-10-20T00:00:00Z"), 2).map((at) =>
      new Date(at).toISOString(),
    );
    expect(autumn).toEqual(["2026-10-26T07:30:00.000Z", "2026-11-02T07:30:00.000Z"]);
  });
});

describe("the task scheduler", () => {
  it("fires a reminder once at its time, records every step, and never again", async () => {
    const clock = new FakeClock(START);
    const runner = new RecordingRunner();
    const tasks = open(clock, runner);
    await tasks.start();
    const task = await tasks.create({
      sessionKey: SESSION,
      instruction: "Remind them to call the bank.",
      schedule: { kind: "once", at: START + 2_000 },
      timeZone: "Europe/Berlin",
      createdBy: "assistant",
    });
    await settle(clock, 1_000, tasks);
    expect(runner.sent).toEqual([]);
    await settle(clock, 1_000, tasks);
    expect(runner.sent).toEqual([
      {
        sessionKey: SESSION,
        text: "Done: Remind them to call the bank.",
        key: `${task.id}-${START + 2_000}`,
      },
    ]);
    await settle(clock, 3_600_000, tasks);
    expect(runner.sent).toHaveLength(1);
    expect(tasks.task(task.id)?.state).toBe("done");
    expect(tasks.firings({ taskId: task.id })).toMatchObject([{ state: "delivered", late: false }]);
    const journal = await readFile(join(dir, "journal.jsonl"), "utf8");
    const states = journal
      .split("\n")
      .filter((line) => line.includes('"firing"'))
      .map((line) => (JSON.parse(line) as { firing: FiringRecord }).firing.state);
    expect(states).toEqual(["claimed", "answered", "delivering", "delivered"]);
  });

  it("fires a recurring task at each time, and once for a stretch it missed", async () => {
    const clock = new FakeClock(START);
    const runner = new RecordingRunner();
    const tasks = open(clock, runner, { graceMs: 3 * 3_600_000 });
    await tasks.start();
    await tasks.create({
      sessionKey: SESSION,
      instruction: "Check the to-do file.",
      schedule: { kind: "every", intervalMs: 3_600_000, anchor: START + 3_600_000 },
      timeZone: "UTC",
      createdBy: "api",
    });
    await settle(clock, 3_600_000, tasks);
    await settle(clock, 3_600_000, tasks);
    expect(runner.sent).toHaveLength(2);
    // The machine slept for five hours: one late firing, not five.
    await settle(clock, 2 * 3_600_000 + 10 * 60_000, tasks);
    expect(runner.sent).toHaveLength(3);
    expect(runner.sent[2]?.text).toBe("(late) Done: Check the to-do file.");
  });

  it("retries a failed turn and a failed send with backoff, and reports a firing that never got through as failed", async () => {
    const clock = new FakeClock(START);
    const runner = new RecordingRunner();
    const tasks = open(clock, runner);
    await tasks.start();
    runner.failTurns = 1;
    runner.failSends = 2;
    await tasks.create({
      sessionKey: SESSION,
      instruction: "Say hi.",
      schedule: { kind: "once", at: START + 1_000 },
      timeZone: "UTC",
      createdBy: "api",
    });
    await settle(clock, 1_000, tasks);
    expect(runner.sent).toEqual([]);
    for (const wait of [1_000, 1_000, 2_000]) await settle(clock, wait, tasks);
    expect(runner.sent).toHaveLength(1);
    expect(tasks.firings()[0]).toMatchObject({ state: "delivered" });

    runner.failSends = 100;
    const doomed = await tasks.create({
      sessionKey: SESSION,
      instruction: "Say bye.",
      schedule: { kind: "once", at: clock.now() + 1_000 },
      timeZone: "UTC",
      createdBy: "api",
    });
    for (let step = 0; step < 8; step += 1) await settle(clock, 20_000, tasks);
    expect(tasks.firings({ taskId: doomed.id })[0]).toMatchObject({
      state: "failed",
      lastError: "the send failed: platform down",
    });
    expect(runner.sent).toHaveLength(1);
  });

  it("never delivers a silent heartbeat answer", async () => {
    const clock = new FakeClock(START);
    const runner = new RecordingRunner();
    runner.reply = () => "[silent]";
    const tasks = open(clock, runner);
    await tasks.start();
    await tasks.create({
      id: "heartbeat",
      kind: "heartbeat",
      sessionKey: SESSION,
      instruction: "Read HEARTBEAT.md.",
      schedule: { kind: "every", intervalMs: 600_000, anchor: START + 600_000 },
      timeZone: "UTC",
      createdBy: "config",
    });
    await settle(clock, 600_000, tasks);
    expect(runner.turns).toEqual(["heartbeat"]);
    expect(runner.sent).toEqual([]);
    expect(tasks.firings()[0]).toMatchObject({ state: "silent" });
  });
});

/** A run that schedules one reminder and stops: its journal holds the one task. */
async function scheduleOneReminder(clock: FakeClock, instruction: string, at: number): Promise<TaskRecord> {
  const first = open(clock, new RecordingRunner());
  await first.start();
  const task = await first.create({
    sessionKey: SESSION,
    instruction,
    schedule: { kind: "once", at },
    timeZone: "UTC",
    createdBy: "api",
  });
  await first.stop();
  return task;
}

describe("the task scheduler across restarts", () => {
  async function crashAt(
    state: "claimed" | "answered" | "delivering",
    repeatable: boolean,
  ): Promise<{ runner: RecordingRunner; tasks: TaskScheduler; firing: FiringRecord | undefined }> {
    const clock = new FakeClock(START);
    // A first run that dies: its journal ends with the firing in `state` (the writes after it never happened).
    const task = await scheduleOneReminder(clock, "Remind them to stretch.", START + 1_000);
    const file = join(dir, "journal.jsonl");
    const firing: FiringRecord = {
      id: `${task.id}-${START + 1_000}`,
      taskId: task.id,
      sessionKey: SESSION,
      dueAt: START + 1_000,
      claimedAt: START + 1_000,
      state,
      late: false,
      attempts: 0,
      ...(state === "claimed" ? {} : { reply: "Time to stretch!" }),
    };
    await appendFile(
      file,
      `${JSON.stringify({ type: "task", task: { ...task, state: "done", nextFireAt: undefined, lastFiredAt: START + 1_000 } })}\n${JSON.stringify({ type: "firing", firing })}\n{"type":"firing","firing":{"id":"torn`,
    );
    clock.advance(5_000);
    const runner = new RecordingRunner();
    runner.repeatable = repeatable;
    const tasks = open(clock, runner);
    await tasks.start();
    await tasks.whenIdle();
    return { runner, tasks, firing: tasks.firings({ taskId: task.id })[0] };
  }

  it("killed between claim and answer: the turn runs again and the reminder is delivered once", async () => {
    const { runner, firing } = await crashAt("claimed", false);
    expect(runner.turns).toHaveLength(1);
    expect(runner.sent.map((sent) => sent.text)).toEqual(["Done: Remind them to stretch."]);
    expect(firing?.state).toBe("delivered");
  });

  it("killed between answer and send: the recorded reply is sent, no second turn", async () => {
    const { runner, firing } = await crashAt("answered", false);
    expect(runner.turns).toEqual([]);
    expect(runner.sent.map((sent) => sent.text)).toEqual(["Time to stretch!"]);
    expect(firing?.state).toBe("delivered");
  });

  it("killed during the send: sent again with the same key where the platform deduplicates, reported uncertain where not", async () => {
    const repeatable = await crashAt("delivering", true);
    expect(repeatable.runner.sent).toEqual([
      { sessionKey: SESSION, text: "Time to stretch!", key: repeatable.firing?.id },
    ]);
    expect(repeatable.firing?.state).toBe("delivered");
    await scheduler?.stop();
    await rm(dir, { recursive: true, force: true });
    dir = await mkdtemp(join(tmpdir(), "almanac-tasks-"));
    const once = await crashAt("delivering", false);
    expect(once.runner.sent).toEqual([]);
    expect(once.firing).toMatchObject({ state: "uncertain" });
    expect(once.firing?.lastError).toContain("could not tell a repeated message apart");
  });

  it("rewrites the journal at start only when there is something to drop: no file for an empty schedule, the same file when nothing changed", async () => {
    const clock = new FakeClock(START);
    const file = join(dir, "journal.jsonl");
    const empty = open(clock, new RecordingRunner());
    await empty.start();
    await empty.stop();
    await expect(stat(file)).rejects.toMatchObject({ code: "ENOENT" });

    await scheduleOneReminder(clock, "Water the plants.", START + 60_000);
    const written = await stat(file);
    const again = open(clock, new RecordingRunner());
    await again.start();
    await again.stop();
    expect((await stat(file)).ino).toBe(written.ino);
    expect(again.tasks().map((task) => task.instruction)).toEqual(["Water the plants."]);

    // A torn last line (a crash mid-append) is dropped by rewriting the journal whole.
    await appendFile(file, '{"type":"task","task":{"id":"torn');
    const afterCrash = open(clock, new RecordingRunner());
    await afterCrash.start();
    await afterCrash.stop();
    expect((await stat(file)).ino).not.toBe(written.ino);
    expect(await readFile(file, "utf8")).not.toContain("torn");
    expect(afterCrash.tasks()).toHaveLength(1);
  });

  it("reads the journal ahead of the start when asked; a journal it cannot read fails the start, not the process", async () => {
    const clock = new FakeClock(START);
    await scheduleOneReminder(clock, "Water the plants.", START + 60_000);
    const ahead = open(clock, new RecordingRunner());
    ahead.load();
    await ahead.start();
    expect(ahead.tasks()).toHaveLength(1);
    await ahead.stop();

    // The journal's directory is a file: the read fails, and only `start` says so.
    const blocked = join(dir, "blocked");
    await appendFile(blocked, "");
    scheduler = new TaskScheduler({
      file: join(blocked, "journal.jsonl"),
      runner: new RecordingRunner(),
      clock,
    });
    scheduler.load();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await expect(scheduler.start()).rejects.toMatchObject({
      code: expect.stringMatching(/^(ENOTDIR|EEXIST)$/),
    });
  });

  it("after downtime: a one-shot missed within the grace runs once, late; one past it is reported, not run", async () => {
    const clock = new FakeClock(START);
    const runner = new RecordingRunner();
    const before = open(clock, runner, { graceMs: 3_600_000 });
    await before.start();
    await before.create({
      sessionKey: SESSION,
      instruction: "Water the plants.",
      title: "plants",
      schedule: { kind: "once", at: START + 60_000 },
      timeZone: "Europe/Berlin",
      createdBy: "api",
    });
    await before.create({
      sessionKey: SESSION,
      instruction: "Call mum.",
      title: "call mum",
      schedule: { kind: "once", at: START + 5 * 3_600_000 },
      timeZone: "Europe/Berlin",
      createdBy: "api",
    });
    await before.stop();
    // Down from 08:00 until 13:30 UTC.
    clock.advance(5.5 * 3_600_000);
    const after = open(clock, runner, { graceMs: 3_600_000 });
    await after.start();
    await after.whenIdle();
    const texts = runner.sent.map((sent) => sent.text);
    expect(texts).toHaveLength(2);
    expect(texts).toContain("(late) Done: Call mum.");
    const notice = texts.find((text) => text.startsWith("I missed"));
    expect(notice).toContain('"plants" was due Sun 6 Dec 2026, 09:01 (Europe/Berlin)');
    expect(
      after
        .firings()
        .map((firing) => firing.state)
        .sort(),
    ).toEqual(["delivered", "missed"]);
    // A later start repeats nothing.
    await after.stop();
    const again = open(clock, runner, { graceMs: 3_600_000 });
    await again.start();
    await again.whenIdle();
    expect(runner.sent).toHaveLength(2);
  });
});
