import { fstatSync, statSync } from "node:fs";
import {
  type FileHandle,
  mkdir,
  mkdtemp,
  open,
  readdir,
  readFile,
  readlink,
  rename,
  rm,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createMessage,
  isAlmanacError,
  type Logger,
  type Message,
  sessionKeyToFileStem,
} from "@almanac/core";
import { createRecordingLogger, type LogEntry } from "@almanac/testkit";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SessionSnapshot } from "./session-snapshot.js";
import { createSessionStore, type SessionStore } from "./session-store.js";

const KEY = "discord:main:dm:42";
const STEM = sessionKeyToFileStem(KEY);
const NOW = Date.UTC(2025, 0, 2, 3, 4, 5, 678);

function snapshotFor(key: string, overrides: Partial<SessionSnapshot> = {}): SessionSnapshot {
  return {
    version: 1,
    key,
    createdAt: 1_000,
    updatedAt: 2_000,
    memory: { summary: "talked about tea", messages: [] },
    stats: { turns: 3, compactions: 1, lastActivity: 2_000, channel: "discord" },
    ...overrides,
  };
}

/** What `load` returns for a snapshot saved while the transcript had `transcriptBytes` bytes and nothing since. */
function loaded(snapshot: SessionSnapshot, transcriptBytes = 0) {
  return { status: "ok", snapshot: { ...snapshot, transcriptBytes }, unseen: [], transcriptBehind: false };
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const result: T[] = [];
  for await (const item of items) result.push(item);
  return result;
}

async function rejectionCode(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isAlmanacError(error) ? error.code : String(error);
  }
  return undefined;
}

let dir: string;
let logs: LogEntry[];
let store: SessionStore;

beforeEach(async () => {
  dir = join(await mkdtemp(join(tmpdir(), "almanac-sessions-")), "sessions");
  logs = [];
  store = createSessionStore({ dir, logger: createRecordingLogger(logs), clock: { now: () => NOW } });
});

afterEach(async () => {
  // The store keeps transcripts open between appends: closed here, not left to the garbage collector.
  await store.close();
  await rm(join(dir, ".."), { recursive: true, force: true });
});

describe("snapshots", () => {
  it("reports a session with no snapshot as missing", async () => {
    expect(await store.load(KEY)).toEqual({ status: "missing" });
  });

  it("saves a snapshot as <stem>.json and loads it back", async () => {
    const snapshot = snapshotFor(KEY);
    await store.save(snapshot);
    expect(await store.load(KEY)).toEqual(loaded(snapshot));
    expect(await readdir(dir)).toEqual([`${STEM}.json`]);
  });

  it("keeps the optional counters and an open turn marker across save and load", async () => {
    const stats = {
      turns: 1,
      compactions: 0,
      lastActivity: 5,
      messageCount: 4,
      contextTokens: 900,
      openTurn: { inputId: "m-1", startedAt: 5 },
    };
    await store.save(snapshotFor(KEY, { stats }));
    const result = await store.load(KEY);
    expect(result.status === "ok" && result.snapshot.stats).toEqual(stats);
  });

  it("replaces the previous snapshot on save", async () => {
    await store.save(snapshotFor(KEY, { updatedAt: 2_000 }));
    await store.save(snapshotFor(KEY, { updatedAt: 3_000, memory: { summary: "newer" } }));
    const result = await store.load(KEY);
    expect(result.status === "ok" && result.snapshot.memory).toEqual({ summary: "newer" });
  });

  it("ignores and removes a half-written temp file left by a crash, keeping the previous snapshot", async () => {
    const snapshot = snapshotFor(KEY);
    await store.save(snapshot);
    const leftover = `.${STEM}.json.0123456789abcdef.tmp`;
    await writeFile(join(dir, leftover), '{"version":1,"key":"discord:main:dm:42","crea');

    const restarted = createSessionStore({ dir, logger: createRecordingLogger(logs) });
    expect(await restarted.load(KEY)).toEqual(loaded(snapshot));
    expect(await readdir(dir)).toEqual([`${STEM}.json`]);
    expect(
      logs.some((entry) => entry.level === "warn" && String(entry.message).includes("interrupted")),
    ).toBe(true);
    expect((await restarted.list()).map((summary) => summary.key)).toEqual([KEY]);
  });

  it("leaves the previous snapshot intact and no temp file behind when a save fails", async () => {
    const snapshot = snapshotFor(KEY);
    await store.save(snapshot);
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(await rejectionCode(store.save(snapshotFor(KEY, { memory: cyclic })))).toBe(
      "session.snapshot_invalid",
    );
    // A failure at the rename: the target name is taken by a non-empty directory.
    const otherKey = "discord:main:dm:43";
    await mkdir(join(dir, `${sessionKeyToFileStem(otherKey)}.json`, "blocker"), { recursive: true });
    await expect(store.save(snapshotFor(otherKey))).rejects.toThrow();
    expect(await store.load(KEY)).toEqual(loaded(snapshot));
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("applies concurrent saves of one key one at a time, in call order", async () => {
    const big = "x".repeat(2_000_000);
    const saves = Array.from({ length: 12 }, (_, index) =>
      store.save(
        snapshotFor(KEY, { updatedAt: index, memory: index === 11 ? { last: true } : { big, index } }),
      ),
    );
    await Promise.all(saves);
    const result = await store.load(KEY);
    expect(result.status === "ok" && result.snapshot.memory).toEqual({ last: true });
    expect(await readdir(dir)).toEqual([`${STEM}.json`]);
  });

  it("refuses to save a snapshot that does not match the envelope", async () => {
    const broken = { ...snapshotFor(KEY), stats: { turns: -1, compactions: 0, lastActivity: 0 } };
    expect(await rejectionCode(store.save(broken))).toBe("session.snapshot_invalid");
    expect(await rejectionCode(store.save(snapshotFor("not a key")))).toBe("session.key_invalid");
  });

  it.each([
    ["invalid JSON", "{ not json", /invalid JSON/],
    ["a wrong version", JSON.stringify({ ...snapshotFor(KEY), version: 2 }), /version/],
    ["a missing memory", JSON.stringify({ ...snapshotFor(KEY), memory: undefined }), /memory/],
    ["another session's key", JSON.stringify(snapshotFor("discord:main:dm:7")), /belongs to session/],
  ])("moves a snapshot with %s aside and reports it as corrupt", async (_label, content, reason) => {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `${STEM}.json`), content);
    const result = await store.load(KEY);
    const movedTo = join(dir, `${STEM}.json.corrupt-2025-01-02T03-04-05-678Z`);
    expect(result).toEqual({ status: "corrupt", reason: expect.stringMatching(reason), movedTo });
    expect(await readFile(movedTo, "utf8")).toBe(content);
    expect(await store.load(KEY)).toEqual({ status: "missing" });
    expect(logs.find((entry) => entry.level === "warn")?.fields).toMatchObject({ key: KEY, movedTo });
  });

  it("never overwrites an earlier corrupt copy taken at the same instant", async () => {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `${STEM}.json`), "first");
    const first = await store.load(KEY);
    await writeFile(join(dir, `${STEM}.json`), "second");
    const second = await store.load(KEY);
    expect(first.status === "corrupt" && second.status === "corrupt").toBe(true);
    if (first.status !== "corrupt" || second.status !== "corrupt") return;
    expect(second.movedTo).toBe(`${first.movedTo}-1`);
    expect(await readFile(first.movedTo, "utf8")).toBe("first");
  });
});

describe("transcripts", () => {
  const message = (text: string, timestamp = 1): Message =>
    createMessage({ role: "user", content: text, timestamp, id: `m-${text}` });

  it("reads nothing for a session without a transcript", async () => {
    expect(await collect(store.readTranscript(KEY))).toEqual([]);
  });

  it("appends one tagged JSON line per message and reads them back in order", async () => {
    const first = [message("a"), message("b\nwith newline\r and \u2028 separators")];
    await store.appendTranscript(KEY, first);
    await store.appendTranscript(KEY, [message("c")]);
    await store.appendTranscript(KEY, []);
    expect(await collect(store.readTranscript(KEY))).toEqual([...first, message("c")]);
    const lines = (await readFile(join(dir, `${STEM}.jsonl`), "utf8")).split("\n");
    expect(lines).toHaveLength(4);
    expect(JSON.parse(lines[0]!)).toEqual({ key: KEY, message: first[0] });
  });

  it("keeps the order of concurrent appends and never splits a batch", async () => {
    const batches = Array.from({ length: 30 }, (_, batch) =>
      Array.from({ length: 5 }, (_, index) => message(`${batch}-${index}-${"z".repeat(batch * 500)}`)),
    );
    await Promise.all(batches.map((batch) => store.appendTranscript(KEY, batch)));
    expect(await collect(store.readTranscript(KEY))).toEqual(batches.flat());
  });

  it("skips a torn final line with a warning and keeps every complete message", async () => {
    await store.appendTranscript(KEY, [message("a"), message("b")]);
    const path = join(dir, `${STEM}.jsonl`);
    await writeFile(path, `${await readFile(path, "utf8")}{"key":"${KEY}","message":{"id":"m-c","ro`);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b")]);
    expect(logs.find((entry) => entry.level === "warn")).toMatchObject({
      fields: { key: KEY, line: 3 },
      message: expect.stringMatching(/torn final/),
    });
  });

  it("appends to the file at the transcript's path even after it was moved away or archived", async () => {
    await store.appendTranscript(KEY, [message("a")]);
    const path = join(dir, `${STEM}.jsonl`);
    await rename(path, `${path}.moved`);
    await store.appendTranscript(KEY, [message("b")]);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("b")]);
    await store.archive(KEY);
    await store.appendTranscript(KEY, [message("c")]);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("c")]);
  });

  it("appends to a file put in the transcript's place by hand, after its own torn line", async () => {
    await store.appendTranscript(KEY, [message("a")]);
    const path = join(dir, `${STEM}.jsonl`);
    const edited = `${await readFile(path, "utf8")}{"key":"${KEY}","message":{"id":"m-x"`;
    await writeFile(`${path}.edit`, edited);
    await rename(`${path}.edit`, path);
    await store.appendTranscript(KEY, [message("b")]);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b")]);
    expect(await readFile(path, "utf8")).toMatch(/"m-x"\n\{"key"/);
  });

  it.skipIf(process.platform !== "linux")(
    "keeps a transcript open between appends and closes it on close, appending still working after",
    async () => {
      const path = join(dir, `${STEM}.jsonl`);
      const openOnPath = async () => {
        const fds = await readdir("/proc/self/fd");
        const targets = await Promise.all(fds.map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => "")));
        return targets.filter((target) => target === path).length;
      };
      await store.appendTranscript(KEY, [message("a")]);
      expect(await openOnPath()).toBe(1);
      await store.close();
      expect(await openOnPath()).toBe(0);
      await store.appendTranscript(KEY, [message("b")]);
      expect(await openOnPath()).toBe(0);
      expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b")]);
    },
  );

  it("starts the next append on a fresh line after a torn one, so the new messages survive", async () => {
    await store.appendTranscript(KEY, [message("a")]);
    const path = join(dir, `${STEM}.jsonl`);
    await writeFile(path, `${await readFile(path, "utf8")}{"key":"torn`);
    await store.appendTranscript(KEY, [message("b")]);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b")]);
  });

  it("skips lines in the middle that are invalid or belong to another session", async () => {
    await mkdir(dir, { recursive: true });
    const good = JSON.stringify({ key: KEY, message: message("ok") });
    const content = [
      good,
      JSON.stringify({ key: KEY, message: { id: "x", role: "robot" } }),
      JSON.stringify({ key: "web:main:dm:other", message: message("other") }),
      "",
      good,
      "",
    ].join("\n");
    await writeFile(join(dir, `${STEM}.jsonl`), content);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("ok"), message("ok")]);
    expect(logs.filter((entry) => entry.level === "warn").map((entry) => entry.fields.line)).toEqual([2, 3]);
  });

  it("reads the transcript as it was when reading began", async () => {
    await store.appendTranscript(KEY, [message("a")]);
    const reading = store.readTranscript(KEY)[Symbol.asyncIterator]();
    const first = await reading.next();
    await store.appendTranscript(KEY, [message("b")]);
    expect(first.value).toEqual(message("a"));
    expect((await reading.next()).done).toBe(true);
  });

  it("refuses to append a message that could not be read back", async () => {
    const bad = { ...message("a"), timestamp: Number.NaN };
    expect(await rejectionCode(store.appendTranscript(KEY, [bad]))).toBe("session.message_invalid");
    expect(await collect(store.readTranscript(KEY))).toEqual([]);
  });
});

describe("listing, archiving and deleting", () => {
  it("lists every session, most recent first, one with only a transcript from the transcript, and warns about unreadable ones", async () => {
    await store.save(snapshotFor("web:main:dm:a", { updatedAt: 10 }));
    await store.save(snapshotFor("web:main:dm:b", { updatedAt: 30 }));
    await store.save(snapshotFor("web:main:dm:c", { updatedAt: 20 }));
    await writeFile(join(dir, "garbage.json"), "{");
    await mkdir(join(dir, "a-directory.json"));
    await writeFile(
      join(dir, `${sessionKeyToFileStem("web:main:dm:d")}.json`),
      JSON.stringify(snapshotFor(KEY)),
    );
    await store.appendTranscript("web:main:dm:e", [
      createMessage({ role: "user", content: "only a transcript", timestamp: 22 }),
      createMessage({ role: "assistant", content: "still listed", timestamp: 25 }),
    ]);

    const listed = await store.list();
    expect(listed.map((summary) => [summary.key, summary.updatedAt])).toEqual([
      ["web:main:dm:b", 30],
      ["web:main:dm:e", 25],
      ["web:main:dm:c", 20],
      ["web:main:dm:a", 10],
    ]);
    expect(listed[1]).toMatchObject({
      createdAt: 22,
      stats: { turns: 1, compactions: 0, lastActivity: 25, channel: "web", messageCount: 2 },
    });
    expect(listed[0]).toEqual({
      key: "web:main:dm:b",
      stem: sessionKeyToFileStem("web:main:dm:b"),
      createdAt: 1_000,
      updatedAt: 30,
      stats: snapshotFor(KEY).stats,
    });
    expect(logs.filter((entry) => entry.level === "warn")).toHaveLength(3);
  });

  it("lists the title a snapshot keeps, and one from the transcript for a session listed from it", async () => {
    const titled = snapshotFor("web:default:web:titled", {
      stats: { turns: 1, compactions: 0, lastActivity: 2_000, title: "How do tides work?" },
    });
    await store.save(titled);
    await store.appendTranscript("web:default:web:orphan", [
      createMessage({ role: "user", content: "  Where is\nthe harbour?", timestamp: 22 }),
      createMessage({ role: "assistant", content: "North.", timestamp: 25 }),
    ]);
    const titles = Object.fromEntries(
      (await store.list()).map((summary) => [summary.key, summary.stats.title]),
    );
    expect(titles).toEqual({
      "web:default:web:titled": "How do tides work?",
      "web:default:web:orphan": "Where is the harbour?",
    });
  });

  it("lists nothing in an empty directory", async () => {
    expect(await store.list()).toEqual([]);
  });

  it("archives snapshot and transcript together under archive/ and starts the session fresh", async () => {
    await store.save(snapshotFor(KEY));
    await store.appendTranscript(KEY, [createMessage({ role: "user", content: "hi" })]);
    const moved = await store.archive(KEY);
    const base = join(dir, "archive", `${STEM}-2025-01-02T03-04-05-678Z`);
    expect(moved).toEqual([`${base}.json`, `${base}.jsonl`]);
    expect(await store.load(KEY)).toEqual({ status: "missing" });
    expect(await collect(store.readTranscript(KEY))).toEqual([]);
    expect(await store.list()).toEqual([]);

    await store.appendTranscript(KEY, [createMessage({ role: "user", content: "again" })]);
    expect(await store.archive(KEY)).toEqual([`${base}-1.jsonl`]);
    expect(await store.archive(KEY)).toEqual([]);
  });

  it("deletes snapshot and transcript and says whether there was anything", async () => {
    await store.save(snapshotFor(KEY));
    await store.appendTranscript(KEY, [createMessage({ role: "user", content: "hi" })]);
    expect(await store.delete(KEY)).toBe(true);
    expect(await readdir(dir)).toEqual([]);
    expect(await store.delete(KEY)).toBe(false);
  });
});

describe("committing a turn", () => {
  const message = (text: string, role: "user" | "assistant" = "user"): Message =>
    createMessage({ role, content: text, timestamp: 1, id: `m-${text}` });
  const transcriptPath = () => join(dir, `${STEM}.jsonl`);

  it("appends the messages and replaces the snapshot, recording the transcript's size", async () => {
    await store.commit(snapshotFor(KEY, { updatedAt: 1 }), [message("a")]);
    await store.commit(snapshotFor(KEY, { updatedAt: 2 }), [message("b", "assistant")]);
    const size = (await readFile(transcriptPath())).length;
    expect(await store.load(KEY)).toEqual(loaded(snapshotFor(KEY, { updatedAt: 2 }), size));
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b", "assistant")]);
    expect((await readdir(dir)).sort()).toEqual([`${STEM}.json`, `${STEM}.jsonl`]);
  });

  it("loads what the transcript got after the snapshot (a turn the process died in) as unseen", async () => {
    await store.commit(snapshotFor(KEY), [message("a"), message("b", "assistant")]);
    const committed = (await readFile(transcriptPath())).length;
    // The next turn opened: its user message is in the transcript, then the process was killed.
    await store.appendTranscript(KEY, [message("c")]);
    const restarted = createSessionStore({ dir, logger: createRecordingLogger(logs) });
    const result = await restarted.load(KEY);
    expect(result).toMatchObject({ status: "ok", unseen: [message("c")], transcriptBehind: false });
    expect(result.status === "ok" && result.snapshot.transcriptBytes).toBe(committed);
  });

  it("reports a transcript shorter than the snapshot recorded", async () => {
    await store.commit(snapshotFor(KEY), [message("a"), message("b", "assistant")]);
    const text = await readFile(transcriptPath(), "utf8");
    await writeFile(transcriptPath(), `${text.split("\n")[0]}\n`);
    expect(await store.load(KEY)).toMatchObject({ status: "ok", unseen: [], transcriptBehind: true });
  });

  it("changes neither file when the snapshot cannot be put in place", async () => {
    await store.commit(snapshotFor(KEY), [message("a")]);
    const before = await readFile(transcriptPath(), "utf8");
    // A failure at the rename: the snapshot's name is taken by a non-empty directory.
    await rm(join(dir, `${STEM}.json`));
    await mkdir(join(dir, `${STEM}.json`, "blocker"), { recursive: true });
    await expect(
      store.commit(snapshotFor(KEY, { updatedAt: 9 }), [message("b", "assistant")]),
    ).rejects.toThrow();
    expect(await readFile(transcriptPath(), "utf8")).toBe(before);
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });

  it("changes neither file when the transcript cannot be written", async () => {
    await store.commit(snapshotFor(KEY), [message("a")]);
    const snapshotBefore = await readFile(join(dir, `${STEM}.json`), "utf8");
    await rm(transcriptPath());
    await mkdir(transcriptPath());
    await expect(
      store.commit(snapshotFor(KEY, { updatedAt: 9 }), [message("b", "assistant")]),
    ).rejects.toThrow();
    expect(await readFile(join(dir, `${STEM}.json`), "utf8")).toBe(snapshotBefore);
    expect((await readdir(dir)).filter((name) => name.endsWith(".tmp"))).toEqual([]);
  });
});

describe("snapshot JSON", () => {
  it("is the snapshot as JSON, also after its messages were written before and one was replaced", async () => {
    const first = createMessage({ role: "user", content: 'hi \u2028 "quoted"', timestamp: 1 });
    const second = createMessage({
      role: "assistant",
      content: [{ type: "text", text: "hello" }],
      timestamp: 2,
    });
    const memory = { version: 1, messages: [first, second], summary: { text: "s" }, counters: { a: 1 } };
    await store.save(snapshotFor(KEY, { memory }));
    const replaced = { ...second, content: [{ type: "text" as const, text: "shortened" }] };
    const next = snapshotFor(KEY, { memory: { ...memory, messages: [first, replaced] }, updatedAt: 3 });
    await store.save(next);
    const text = await readFile(join(dir, `${STEM}.json`), "utf8");
    expect(JSON.parse(text)).toEqual({ ...JSON.parse(JSON.stringify(next)), transcriptBytes: 0 });
    expect(await store.load(KEY)).toEqual(loaded(JSON.parse(JSON.stringify(next)) as SessionSnapshot));
  });
});

describe("written appends (fsynced later)", () => {
  const message = (text: string): Message =>
    createMessage({ role: "user", content: text, timestamp: 1, id: `m-${text}` });
  const transcript = () => join(dir, `${STEM}.jsonl`);

  /**
   * Counts fsyncs by file (device and inode, as they are when the fsync starts). The store fsyncs transcripts,
   * their directory and snapshots through `node:fs/promises` file handles, which share one prototype: the spy is
   * on its `sync`. `failNext` makes the next fsync fail as a dying disk's would.
   */
  async function watchFsyncs() {
    const flushed: string[] = [];
    const probe = await open(dir, "r");
    const prototype = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const original = prototype.sync;
    let failures = 0;
    const spy = vi.spyOn(prototype, "sync").mockImplementation(async function (this: FileHandle) {
      if (failures > 0) {
        failures -= 1;
        throw Object.assign(new Error("EIO: i/o error, fsync"), { code: "EIO" });
      }
      const { dev, ino } = fstatSync(this.fd);
      flushed.push(`${dev}:${ino}`);
      return original.call(this);
    });
    const idOf = (path: string) => {
      const { dev, ino } = statSync(path);
      return `${dev}:${ino}`;
    };
    return {
      spy,
      failNext: () => {
        failures += 1;
      },
      of: (path: string) => flushed.filter((id) => id === idOf(path)).length,
    };
  }

  /**
   * Opens the store over a transcript holding "a", synced, and counts fsyncs from then on; with `failNextFsync`
   * the next fsync fails as a dying disk's would.
   */
  async function afterSyncedLine(options: {
    deferredSyncMs: number;
    logger?: Logger;
    failNextFsync?: boolean;
  }): Promise<Awaited<ReturnType<typeof watchFsyncs>>> {
    const { failNextFsync = false, ...storeOptions } = options;
    store = createSessionStore({ dir, ...storeOptions });
    await store.appendTranscript(KEY, [message("a")]);
    const fsyncs = await watchFsyncs();
    if (failNextFsync) fsyncs.failNext();
    return fsyncs;
  }

  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("writes them to the file at once and fsyncs them with the session's next synced append", async () => {
    const fsyncs = await afterSyncedLine({ deferredSyncMs: 60_000 });
    await store.appendTranscript(KEY, [message("b")], "written");
    expect(await readFile(transcript(), "utf8")).toContain('"m-b"');
    expect(fsyncs.of(transcript())).toBe(0);
    await store.appendTranscript(KEY, [message("c")]);
    expect(fsyncs.of(transcript())).toBe(1);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b"), message("c")]);
    await store.close();
  });

  it("fsyncs them after the deferred-sync delay when nothing else does", async () => {
    const fsyncs = await afterSyncedLine({ deferredSyncMs: 10 });
    await store.appendTranscript(KEY, [message("b")], "written");
    expect(fsyncs.of(transcript())).toBe(0);
    await vi.waitFor(() => expect(fsyncs.of(transcript())).toBe(1));
    await store.close();
  });

  it("drops the pending deferred fsync once a synced append or a save covered the lines", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      store = createSessionStore({ dir, deferredSyncMs: 10 });
      await store.appendTranscript(KEY, [message("a")], "written");
      expect(vi.getTimerCount()).toBe(1);
      await store.appendTranscript(KEY, [message("b")]);
      expect(vi.getTimerCount()).toBe(0);
      await store.appendTranscript(KEY, [message("c")], "written");
      await store.save(snapshotFor(KEY));
      expect(vi.getTimerCount()).toBe(0);
      await store.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("fsyncs them, and nothing else, on a synced append of no messages, a save or close", async () => {
    const fsyncs = await afterSyncedLine({ deferredSyncMs: 60_000 });
    await store.appendTranscript(KEY, []);
    expect(fsyncs.of(transcript())).toBe(0);
    await store.appendTranscript(KEY, [message("b")], "written");
    await store.appendTranscript(KEY, []);
    expect(fsyncs.of(transcript())).toBe(1);
    await store.appendTranscript(KEY, [message("c")], "written");
    await store.save(snapshotFor(KEY));
    expect(fsyncs.of(transcript())).toBe(2);
    // The snapshot counts every line written before it.
    expect(await store.load(KEY)).toMatchObject({ status: "ok", unseen: [] });
    await store.appendTranscript(KEY, [message("d")], "written");
    await store.close();
    expect(fsyncs.of(transcript())).toBe(3);
  });

  it("fsyncs a new transcript's directory entry with its first synced append", async () => {
    await mkdir(dir, { recursive: true });
    store = createSessionStore({ dir, deferredSyncMs: 60_000 });
    const fsyncs = await watchFsyncs();
    await store.appendTranscript(KEY, [message("a")], "written");
    expect(fsyncs.of(dir)).toBe(0);
    await store.appendTranscript(KEY, [message("b")]);
    expect([fsyncs.of(transcript()), fsyncs.of(dir)]).toEqual([1, 1]);
    await store.appendTranscript(KEY, [message("c")]);
    expect([fsyncs.of(transcript()), fsyncs.of(dir)]).toEqual([2, 1]);
    await store.close();
  });

  it("fsyncs them before closing a transcript the open-handle cache lets go of", async () => {
    store = createSessionStore({ dir, deferredSyncMs: 60_000 });
    const keys = Array.from({ length: 130 }, (_, index) => `discord:main:dm:${index}`);
    for (const key of keys) await store.appendTranscript(key, [message("a")]);
    const fsyncs = await watchFsyncs();
    for (const key of keys) await store.appendTranscript(key, [message("b")], "written");
    const first = join(dir, `${sessionKeyToFileStem(keys[0]!)}.jsonl`);
    const last = join(dir, `${sessionKeyToFileStem(keys.at(-1)!)}.jsonl`);
    await vi.waitFor(() => expect(fsyncs.of(first)).toBe(1));
    expect(fsyncs.of(last)).toBe(0);
    await store.close();
    expect(fsyncs.of(last)).toBe(1);
  });

  it("rejects the next append with the error of a deferred fsync that failed, and appends again after it", async () => {
    const entries: LogEntry[] = [];
    const fsyncs = await afterSyncedLine({
      deferredSyncMs: 10,
      logger: createRecordingLogger(entries),
      failNextFsync: true,
    });
    await store.appendTranscript(KEY, [message("b")], "written");
    await vi.waitFor(() => expect(fsyncs.spy).toHaveBeenCalled());
    await vi.waitFor(() =>
      expect(entries).toContainEqual(expect.objectContaining({ level: "error", fields: expect.anything() })),
    );
    // Lines written before may not be on disk: the caller hears of it instead of a success.
    expect(await rejectionCode(store.appendTranscript(KEY, [message("c")]))).toMatch(/EIO/);
    await store.appendTranscript(KEY, [message("d")]);
    expect(await collect(store.readTranscript(KEY))).toEqual([message("a"), message("b"), message("d")]);
    await store.close();
  });

  it("rejects a synced append of no messages after a deferred fsync failed, as a turn's end may be", async () => {
    const fsyncs = await afterSyncedLine({ deferredSyncMs: 10, failNextFsync: true });
    await store.appendTranscript(KEY, [message("b")], "written");
    await vi.waitFor(() => expect(fsyncs.spy).toHaveBeenCalled());
    // The deferred fsync holds the session's lock: this waits for it, then hears of its failure.
    expect(await rejectionCode(store.appendTranscript(KEY, []))).toMatch(/EIO/);
    await store.appendTranscript(KEY, []);
    await store.close();
  });
});
