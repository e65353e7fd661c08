import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMessage, formatSessionKey, type SessionKeyParts } from "@almanac/core";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { SessionSnapshot } from "./session-snapshot.js";
import { createSessionStore } from "./session-store.js";

// Most file systems allow 255 bytes per file name; the longest name the store writes adds ".jsonl".
const MAX_FILE_NAME_BYTES = 255;

function snapshotFor(key: string): SessionSnapshot {
  return {
    version: 1,
    key,
    createdAt: 1_000,
    updatedAt: 2_000,
    memory: { summary: `summary of ${key}`, messages: [] },
    stats: { turns: 1, compactions: 0, lastActivity: 2_000, channel: "test" },
  };
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "almanac-session-names-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Conversation ids as the platforms send them, and names people type. */
const CHANNEL_KEYS: ReadonlyArray<readonly [string, SessionKeyParts]> = [
  [
    "a DingTalk conversation id (base64 with + / =)",
    { channel: "dingtalk", account: "bot", kind: "group", id: "cidAbC+dE/fG==" },
  ],
  [
    "a Feishu chat id",
    { channel: "feishu", account: "app", kind: "group", id: "oc_5ad11d72b830411d72b836c20" },
  ],
  [
    "a Discord thread named in Chinese",
    { channel: "discord", account: "main", kind: "thread", id: "1234", thread: "讨论 🧵" },
  ],
  ["a Feishu group named in Arabic", { channel: "feishu", account: "app", kind: "group", id: "مجموعة" }],
  ["an API name with a newline", { channel: "api", account: "default", kind: "api", id: "a\nb" }],
  [
    "a 256-character web conversation",
    { channel: "web", account: "default", kind: "web", id: `${"名".repeat(255)}🎉` },
  ],
  ["names differing only in case", { channel: "api", account: "default", kind: "api", id: "Straße" }],
  ["…and its other case", { channel: "api", account: "default", kind: "api", id: "straße" }],
];

describe("session files for names in any script", () => {
  it("stores, lists and reloads every channel's keys after a restart, each in its own files", async () => {
    const dir = join(root, "sessions");
    const store = createSessionStore({ dir });
    const keys = CHANNEL_KEYS.map(([, parts]) => formatSessionKey(parts));
    for (const key of keys) {
      await store.save(snapshotFor(key));
      await store.appendTranscript(key, [
        createMessage({ role: "user", content: `hello from ${key}`, timestamp: 1 }),
      ]);
    }
    await store.close();

    const restarted = createSessionStore({ dir });
    expect((await restarted.list()).map((summary) => summary.key).sort()).toEqual([...keys].sort());
    for (const key of keys) {
      const loaded = await restarted.load(key);
      expect(loaded.status === "ok" && loaded.snapshot.memory).toEqual(snapshotFor(key).memory);
      const transcript = [];
      for await (const message of restarted.readTranscript(key)) transcript.push(message);
      expect(transcript.map((message) => message.content)).toEqual([
        [{ type: "text", text: `hello from ${key}` }],
      ]);
    }
    const files = await readdir(dir);
    expect(files).toHaveLength(keys.length * 2);
    for (const file of files) expect(Buffer.byteLength(file)).toBeLessThanOrEqual(MAX_FILE_NAME_BYTES);
  });

  it("gives any conversation name of up to 256 characters its own files that list back to its key", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: "binary", minLength: 1, maxLength: 256 }), async (id) => {
        run += 1;
        const dir = join(root, `property-${run}`);
        const store = createSessionStore({ dir });
        const key = formatSessionKey({ channel: "api", account: "default", kind: "api", id });
        await store.save(snapshotFor(key));
        expect((await createSessionStore({ dir }).list()).map((summary) => summary.key)).toEqual([key]);
        for (const file of await readdir(dir)) {
          expect(Buffer.byteLength(file)).toBeLessThanOrEqual(MAX_FILE_NAME_BYTES);
        }
      }),
      { numRuns: 40 },
    );
  });
});
