import { describe, expect, it } from "vitest";
import { webSessionKey } from "./conversations.js";
import {
  applyFiringEvent,
  applyTaskDetailEvent,
  applyTaskEvent,
  conversationChoices,
  createTaskBody,
  type Firing,
  groupTasks,
  readFiring,
  readTask,
  type Task,
} from "./tasks.js";

function task(id: string, fields: Partial<Task> = {}): Task {
  return {
    id,
    sessionKey: "web:default:web:tides",
    title: `Task ${id}`,
    instruction: "Remind me to stretch.",
    schedule: { kind: "every", intervalMs: 3_600_000, anchor: 0 },
    timeZone: "Europe/Berlin",
    state: "active",
    kind: "task",
    createdAt: 1_000,
    createdBy: "console",
    ...fields,
  };
}

function firing(id: string, fields: Partial<Firing> = {}): Firing {
  return {
    id,
    taskId: "T1",
    sessionKey: "web:default:web:tides",
    dueAt: 5_000,
    claimedAt: 5_000,
    state: "claimed",
    late: false,
    missed: false,
    attempts: 0,
    ...fields,
  };
}

describe("reading tasks and firings from the server", () => {
  it("reads a task record as the server sends it", () => {
    const record = {
      id: "T7K2QD",
      sessionKey: "web:default:web:tides",
      title: "Stretch",
      instruction: "Remind me to stretch.",
      schedule: { kind: "cron", expression: "30 8 * * 1", timeZone: "Europe/Berlin" },
      timeZone: "Europe/Berlin",
      state: "paused",
      kind: "heartbeat",
      createdAt: 10,
      createdBy: "api",
      nextFireAt: 20,
    };
    expect(readTask(record)).toEqual(record);
  });

  it("refuses a task without an id, a known state or a readable schedule", () => {
    const good = { id: "T1", state: "active", schedule: { kind: "once", at: 5 } };
    expect(readTask(good)).toMatchObject({ id: "T1", title: "T1", kind: "task" });
    expect(readTask({ ...good, id: "" })).toBeUndefined();
    expect(readTask({ ...good, state: "sleeping" })).toBeUndefined();
    expect(readTask({ ...good, schedule: { kind: "once", at: "soon" } })).toBeUndefined();
    expect(readTask({ ...good, schedule: { kind: "every", intervalMs: 0, anchor: 0 } })).toBeUndefined();
    expect(readTask({ ...good, schedule: { kind: "cron", expression: "" } })).toBeUndefined();
    expect(readTask([good])).toBeUndefined();
  });

  it("reads a firing with its outcome, and leaves out what it does not carry", () => {
    expect(
      readFiring({
        id: "F1",
        taskId: "T1",
        sessionKey: "k",
        dueAt: 5,
        claimedAt: 6,
        state: "failed",
        late: true,
        attempts: 5,
        lastError: "model unreachable",
        reply: 42,
      }),
    ).toEqual({
      id: "F1",
      taskId: "T1",
      sessionKey: "k",
      dueAt: 5,
      claimedAt: 6,
      state: "failed",
      late: true,
      missed: false,
      attempts: 5,
      lastError: "model unreachable",
    });
    expect(readFiring({ id: "F1", dueAt: 5, state: "exploded" })).toBeUndefined();
  });
});

describe("the task list", () => {
  it("lists active tasks soonest first, then paused ones, and the finished ones apart, latest first", () => {
    const groups = groupTasks([
      task("late", { nextFireAt: 300 }),
      task("done-old", { state: "done", createdAt: 10, lastFiredAt: 100 }),
      task("paused", { state: "paused", nextFireAt: 50 }),
      task("soon", { nextFireAt: 100 }),
      task("cancelled-new", { state: "cancelled", createdAt: 900 }),
    ]);
    expect(groups.scheduled.map((entry) => entry.id)).toEqual(["soon", "late", "paused"]);
    expect(groups.finished.map((entry) => entry.id)).toEqual(["cancelled-new", "done-old"]);
  });

  it("follows task-changed and task-deleted events", () => {
    const tasks = [task("T1"), task("T2")];
    const paused = applyTaskEvent(tasks, {
      type: "task-changed",
      data: { task: { ...task("T1"), state: "paused" } },
    });
    expect(paused.map((entry) => [entry.id, entry.state])).toEqual([
      ["T1", "paused"],
      ["T2", "active"],
    ]);
    const added = applyTaskEvent(paused, { type: "task-changed", data: { task: task("T3") } });
    expect(added.map((entry) => entry.id)).toEqual(["T1", "T2", "T3"]);
    expect(
      applyTaskEvent(added, { type: "task-deleted", data: { taskId: "T2" } }).map((entry) => entry.id),
    ).toEqual(["T1", "T3"]);
    // An unreadable task changes nothing.
    expect(applyTaskEvent(tasks, { type: "task-changed", data: { task: { id: "T9" } } })).toBe(tasks);
  });

  it("takes a firing's task as it is now, but never brings back a task that was deleted", () => {
    const tasks = [task("T1")];
    const fired = applyTaskEvent(tasks, {
      type: "firing-changed",
      data: { firing: firing("F1"), task: task("T1", { lastFiredAt: 5_000 }) },
    });
    expect(fired[0]?.lastFiredAt).toBe(5_000);
    const gone = applyTaskEvent([], {
      type: "firing-changed",
      data: { firing: firing("F1"), task: task("T1") },
    });
    expect(gone).toEqual([]);
  });
});

describe("a task's detail and the recent firings", () => {
  it("adds and moves on the firings of its own task only, newest first", () => {
    const detail = { task: task("T1"), firings: [firing("F1", { claimedAt: 1 })] };
    const claimed = applyTaskDetailEvent(detail, "T1", {
      type: "firing-changed",
      data: { firing: firing("F2", { claimedAt: 2 }), task: task("T1") },
    });
    expect(claimed.firings.map((entry) => entry.id)).toEqual(["F2", "F1"]);
    const delivered = applyTaskDetailEvent(claimed, "T1", {
      type: "firing-changed",
      data: { firing: firing("F2", { claimedAt: 2, state: "delivered", reply: "Stretch!" }) },
    });
    expect(delivered.firings.map((entry) => [entry.id, entry.state])).toEqual([
      ["F2", "delivered"],
      ["F1", "claimed"],
    ]);
    const other = applyTaskDetailEvent(delivered, "T1", {
      type: "firing-changed",
      data: { firing: firing("F3", { taskId: "T2" }) },
    });
    expect(other).toBe(delivered);
    const renamed = applyTaskDetailEvent(delivered, "T1", {
      type: "task-changed",
      data: { task: task("T1", { title: "Stretch", state: "paused" }) },
    });
    expect(renamed.task).toMatchObject({ title: "Stretch", state: "paused" });
    expect(renamed.firings).toBe(delivered.firings);
    expect(applyTaskDetailEvent(renamed, "T1", { type: "task-changed", data: { task: task("T2") } })).toBe(
      renamed,
    );
  });

  it("keeps the recent firings of every task to the limit, newest first", () => {
    let firings: readonly Firing[] = [];
    for (const [id, claimedAt] of [
      ["F1", 1],
      ["F2", 2],
      ["F3", 3],
    ] as const)
      firings = applyFiringEvent(
        firings,
        { type: "firing-changed", data: { firing: firing(id, { claimedAt }) } },
        2,
      );
    expect(firings.map((entry) => entry.id)).toEqual(["F3", "F2"]);
    expect(applyFiringEvent(firings, { type: "task-deleted", data: { taskId: "T1" } }, 2)).toBe(firings);
  });
});

describe("the New task form", () => {
  it("sends exactly one way of saying when, as typed, and leaves out what is empty", () => {
    expect(
      createTaskBody({
        sessionKey: "web:default:web:tides",
        instruction: "  Remind me to stretch. ",
        title: " ",
        when: { kind: "in", value: " 2s " },
        timeZone: "Europe/Berlin",
      }),
    ).toEqual({
      sessionKey: "web:default:web:tides",
      instruction: "Remind me to stretch.",
      in: "2s",
      timeZone: "Europe/Berlin",
      via: "console",
    });
    expect(
      createTaskBody({
        sessionKey: "k",
        instruction: "Weekly review",
        title: "Review",
        when: { kind: "cron", value: "30 8 * * 1" },
      }),
    ).toEqual({
      sessionKey: "k",
      instruction: "Weekly review",
      title: "Review",
      cron: "30 8 * * 1",
      via: "console",
    });
  });

  it("offers the console's own conversation first, even before it has a session, then chats, then the rest", () => {
    const own = webSessionKey("mine");
    const sessions = [
      { key: "discord:default:dm:42", title: "hi there", lastActivity: 300 },
      { key: webSessionKey("older"), title: "", lastActivity: 100 },
      { key: webSessionKey("newer"), title: "Tides", lastActivity: 200 },
    ];
    expect(conversationChoices(sessions, own)).toEqual([
      { sessionKey: own, label: "This console's chat: mine" },
      { sessionKey: webSessionKey("newer"), label: "Chat: Tides" },
      { sessionKey: webSessionKey("older"), label: "Chat: older" },
      { sessionKey: "discord:default:dm:42", label: "discord:default:dm:42 (hi there)" },
    ]);
    expect(conversationChoices([{ key: own, title: "Stretching", lastActivity: 1 }], own)).toEqual([
      { sessionKey: own, label: "This console's chat: Stretching" },
    ]);
  });
});
