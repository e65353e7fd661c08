import {
  createMessage,
  formatSessionKey,
  isAlmanacError,
  type Message,
  type SessionKeyParts,
} from "@almanac/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openSession, type Session, type SessionStore } from "../../src/sessions/session.js";
import type { SessionSnapshot } from "../../src/sessions/session-snapshot.js";

/** A store under test, and the same storage seen by a new process. */
export interface SessionStoreFixture {
  readonly store: SessionStore;
  /** A new store over the same storage, as after a restart. */
  reopen(): SessionStore;
  cleanup(): Promise<void>;
}

const KEY = "discord:main:dm:42";

function snapshotOf(key: string, messages: readonly Message[], overrides: Partial<SessionSnapshot> = {}) {
  const snapshot: SessionSnapshot = {
    version: 1,
    key,
    createdAt: 1_000,
    updatedAt: 2_000,
    memory: { summary: { text: "talked about tea" }, messages },
    stats: { turns: 1, compactions: 0, lastActivity: 2_000, channel: "discord" },
    ...overrides,
  };
  return snapshot;
}

function said(role: "user" | "assistant", text: string, timestamp: number, marks?: string[]): Message {
  return createMessage({ role, content: text, timestamp, ...(marks ? { marks } : {}) });
}

async function historyOf(session: Session): Promise<Message[]> {
  const messages: Message[] = [];
  for await (const message of session.history()) messages.push(message);
  return messages;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (error) {
    return isAlmanacError(error) ? error.code : String(error);
  }
  return undefined;
}

/** Keys as the platforms and people spell them, in several scripts. */
const NAMED: readonly SessionKeyParts[] = [
  { channel: "discord", account: "main", kind: "thread", id: "1234", thread: "讨论 🧵" },
  { channel: "feishu", account: "app", kind: "group", id: "مجموعة" },
  { channel: "dingtalk", account: "bot", kind: "group", id: "cidAbC+dE/fG==" },
  { channel: "api", account: "default", kind: "api", id: "Straße" },
  { channel: "api", account: "default", kind: "api", id: "straße" },
  { channel: "web", account: "default", kind: "web", id: "a\nb" },
];

/**
 * The behaviour every {@link SessionStore} promises, through the {@link Session} a loaded session holds:
 * run by each implementation's `*.contract.test.ts` (the file store and the in-memory fake).
 */
export function describeSessionStoreContract(name: string, create: () => Promise<SessionStoreFixture>): void {
  describe(`session store contract: ${name}`, () => {
    let fixture: SessionStoreFixture;
    let session: Session;
    beforeEach(async () => {
      fixture = await create();
      session = openSession(fixture.store, KEY);
    });
    afterEach(async () => {
      await fixture.store.close();
      await fixture.cleanup();
    });

    it("reports a session never written as missing, with no history, and does not list it", async () => {
      expect(await session.load()).toEqual({ status: "missing" });
      expect(await historyOf(session)).toEqual([]);
      expect(await fixture.store.list()).toEqual([]);
    });

    it("gives back appended messages in order, marks and all, also after a restart", async () => {
      const messages = [
        said("user", "hello 👋", 1),
        said("assistant", "hi", 2, ["stopped"]),
        said("user", "again", 3),
      ];
      await session.append(messages.slice(0, 2));
      await session.append(messages.slice(2));
      expect(await historyOf(session)).toEqual(messages);
      expect(await historyOf(openSession(fixture.reopen(), KEY))).toEqual(messages);
    });

    it("loads the last checkpoint with nothing unseen when the transcript holds exactly its messages", async () => {
      const messages = [said("user", "hello", 1), said("assistant", "hi", 2)];
      await session.checkpoint(snapshotOf(KEY, messages), messages);
      const loaded = await openSession(fixture.reopen(), KEY).load();
      expect(loaded.status).toBe("ok");
      if (loaded.status !== "ok") return;
      expect(loaded.snapshot.memory).toEqual(snapshotOf(KEY, messages).memory);
      expect(loaded.snapshot.stats).toEqual(snapshotOf(KEY, messages).stats);
      expect(loaded.unseen).toEqual([]);
      expect(loaded.transcriptBehind).toBe(false);
      expect(await historyOf(session)).toEqual(messages);
    });

    it("hands back the messages appended after the checkpoint as unseen (the turns to recover)", async () => {
      const first = [said("user", "hello", 1), said("assistant", "hi", 2)];
      await session.checkpoint(snapshotOf(KEY, first), first);
      const later = [said("user", "and then?", 3), said("assistant", "then this", 4), said("user", "cut", 5)];
      await session.append(later);
      const loaded = await openSession(fixture.reopen(), KEY).load();
      expect(loaded.status === "ok" && loaded.unseen).toEqual(later);
      // A checkpoint without new messages catches the snapshot up.
      await session.checkpoint(snapshotOf(KEY, [...first, ...later]));
      const caughtUp = await session.load();
      expect(caughtUp.status === "ok" && caughtUp.unseen).toEqual([]);
    });

    it("keeps the transcript when the snapshot is moved aside, and lists the session from it", async () => {
      const messages = [said("user", "hello", 1_000), said("assistant", "hi", 5_000)];
      await session.checkpoint(snapshotOf(KEY, messages), messages);
      const moved = await session.moveAside("its working memory is unusable");
      expect(moved.status).toBe("corrupt");
      expect(moved.status === "corrupt" && moved.reason).toBe("its working memory is unusable");
      expect(await session.load()).toEqual({ status: "missing" });
      expect(await session.moveAside("again")).toEqual({ status: "missing" });
      expect(await historyOf(session)).toEqual(messages);
      const [listed] = await fixture.store.list();
      expect(listed).toMatchObject({
        key: KEY,
        createdAt: 1_000,
        updatedAt: 5_000,
        stats: { turns: 1, messageCount: 2, channel: "discord" },
      });
    });

    it("streams history: a reader may stop after a page, and sees none of the appends made after it began", async () => {
      const messages = Array.from({ length: 50 }, (_, index) => said("user", `message ${index}`, index));
      await session.append(messages);
      const page: Message[] = [];
      for await (const message of session.history()) {
        page.push(message);
        if (page.length === 10) break;
      }
      expect(page).toEqual(messages.slice(0, 10));

      const reading = session.history()[Symbol.asyncIterator]();
      const first = await reading.next();
      await session.append([said("user", "too late", 99)]);
      const rest: Message[] = [];
      for (let next = await reading.next(); next.done !== true; next = await reading.next())
        rest.push(next.value);
      expect([first.value, ...rest]).toEqual(messages);
      expect(await historyOf(session)).toHaveLength(51);
    });

    it("starts the session over on reset, keeping nothing in place, and says when there was nothing", async () => {
      const messages = [said("user", "hello", 1), said("assistant", "hi", 2)];
      await session.checkpoint(snapshotOf(KEY, messages), messages);
      expect((await session.reset()).length).toBeGreaterThan(0);
      expect(await session.load()).toEqual({ status: "missing" });
      expect(await historyOf(session)).toEqual([]);
      expect(await fixture.store.list()).toEqual([]);
      expect(await session.reset()).toEqual([]);
      await session.append([said("user", "fresh start", 3)]);
      expect((await historyOf(session)).map((message) => message.content)).toEqual([
        [{ type: "text", text: "fresh start" }],
      ]);
    });

    it("deletes a session for good and says whether there was one", async () => {
      await session.append([said("user", "hello", 1)]);
      expect(await session.delete()).toBe(true);
      expect(await historyOf(session)).toEqual([]);
      expect(await session.delete()).toBe(false);
    });

    it("keeps every name in any script apart and lists each back by its exact key after a restart", async () => {
      const keys = NAMED.map(formatSessionKey);
      for (const [index, key] of keys.entries()) {
        const named = openSession(fixture.store, key);
        const message = said("user", `hello from ${key}`, 10 + index);
        await named.checkpoint(
          snapshotOf(key, [message], {
            updatedAt: 10 + index,
            stats: { turns: 0, compactions: 0, lastActivity: 10 + index },
          }),
          [message],
        );
      }
      const reopened = fixture.reopen();
      const listed = await reopened.list();
      // Most recently updated first.
      expect(listed.map((summary) => summary.key)).toEqual([...keys].reverse());
      for (const key of keys) {
        const history = await historyOf(openSession(reopened, key));
        expect(history.map((message) => message.content)).toEqual([
          [{ type: "text", text: `hello from ${key}` }],
        ]);
      }
    });

    it("refuses a message that could not be read back and a snapshot of the wrong shape, writing nothing", async () => {
      const bad = { ...said("user", "x", 1), role: "narrator" } as unknown as Message;
      expect(await codeOf(session.append([bad]))).toBe("session.message_invalid");
      const broken = { ...snapshotOf(KEY, []), stats: { turns: -1 } } as unknown as SessionSnapshot;
      expect(await codeOf(session.checkpoint(broken, [said("user", "x", 1)]))).toBe(
        "session.snapshot_invalid",
      );
      expect(await codeOf(session.checkpoint(snapshotOf("api:default:api:other", [])))).toBe(
        "session.snapshot_invalid",
      );
      expect(await session.load()).toEqual({ status: "missing" });
      expect(await historyOf(session)).toEqual([]);
    });
  });
}
