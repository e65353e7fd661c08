import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createToolkit } from "@almanac/agent";
import { AttachmentTooLargeError, type OutboundFile } from "@almanac/core";
import { type MemoryScope, OWNER_SCOPE, sharedScope, sharedScopePrefix } from "@almanac/memory-files";
import sharp from "sharp";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sentFileOf } from "../../../console/src/chat-files.js";
import type { FileSendOutcome } from "../channels/channel-hub.js";
import type { SentFile } from "../events/event-bus.js";
import { SEND_FILE_TOOL, sendFileToolSource } from "./send-file-tool.js";

const GROUP_KEY = "discord:default:group:g1";
const group = sharedScope({ channel: "discord", account: "default", kind: "group", id: "g1" });
const OWNER_DM = "discord:default:dm:alice";

/** `shared/<folder>/` of a shared scope. */
function folderOf(scope: MemoryScope): string {
  if (scope.kind !== "shared") throw new TypeError("not a shared scope");
  return sharedScopePrefix(scope);
}
const GROUP_FOLDER = folderOf(group);

let home: string;
let workspace: string;
let uploads: OutboundFile[];
let recorded: SentFile[];
/** What the hub answers for the next upload (or throws). */
let hubAnswer: () => Promise<FileSendOutcome>;

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "almanac-send-file-"));
  workspace = join(home, "workspace");
  await mkdir(join(workspace, "inbox", "2026-12-06"), { recursive: true });
  await mkdir(join(workspace, "notes"), { recursive: true });
  await mkdir(join(workspace, GROUP_FOLDER, "inbox", "2026-12-06"), { recursive: true });
  await mkdir(join(home, "state", "sessions"), { recursive: true });
  const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: "#c33" } })
    .png()
    .toBuffer();
  await writeFile(join(workspace, "inbox", "2026-12-06", "cat.png"), png);
  await writeFile(join(workspace, "notes", "list.txt"), "milk\neggs\n");
  await writeFile(join(workspace, "MEMORY.md"), "# private\n");
  await writeFile(join(workspace, GROUP_FOLDER, "inbox", "2026-12-06", "menu.txt"), "soup");
  await writeFile(join(home, "state", "sessions", "secret.jsonl"), "{}");
  uploads = [];
  recorded = [];
  hubAnswer = async () => "sent";
});
afterEach(async () => {
  await rm(home, { recursive: true, force: true });
});

/** Calls send_file as the model would (JSON arguments), for a turn of `sessionKey` in `scope`. */
async function call(
  scope: MemoryScope,
  sessionKey: string,
  args: Record<string, unknown>,
  maxBytes = 1_048_576,
) {
  const source = sendFileToolSource({
    workspace,
    maxBytes,
    sendToChat: async (file) => {
      uploads.push(file);
      return hubAnswer();
    },
    onSent: (sent) => recorded.push(sent),
  });
  const toolkit = createToolkit(source.tools(scope, sessionKey));
  return toolkit.execute({
    type: "tool_call",
    id: "c1",
    name: SEND_FILE_TOOL,
    arguments: JSON.stringify(args),
  });
}

describe("send_file", () => {
  it("uploads an owner's workspace image to a chat app with its type read from the bytes and the caption", async () => {
    const result = await call(OWNER_SCOPE, OWNER_DM, {
      path: "inbox/2026-12-06/cat.png",
      caption: "the cat",
    });
    expect(result.isError).toBeUndefined();
    expect(result.content).toMatch(
      /^Sent inbox\/2026-12-06\/cat\.png \(image\/png, \d+ B\) to this conversation\.$/,
    );
    expect(uploads).toHaveLength(1);
    expect(uploads[0]).toMatchObject({
      sessionKey: OWNER_DM,
      name: "cat.png",
      contentType: "image/png",
      caption: "the cat",
    });
    expect(recorded).toMatchObject([{ sessionKey: OWNER_DM, path: "inbox/2026-12-06/cat.png" }]);
    // The console finds the file in a transcript by this result and the call's arguments.
    expect(sentFileOf(result.content, JSON.stringify({ caption: "the cat" }))).toEqual({
      name: "cat.png",
      kind: "image",
      path: "inbox/2026-12-06/cat.png",
      caption: "the cat",
    });
  });

  it("records a file sent to a console or API conversation instead of uploading it", async () => {
    for (const key of ["web:default:web:main", "api:default:api:main"]) {
      const result = await call(OWNER_SCOPE, key, { path: "./notes/../notes/list.txt" });
      expect(result.content).toBe(
        "Sent notes/list.txt (text/plain, 10 B); it is shown in this conversation.",
      );
      expect(sentFileOf(result.content, "{}")?.path).toBe("notes/list.txt");
    }
    expect(uploads).toEqual([]);
    expect(
      recorded.map((sent) => [sent.sessionKey, sent.path, sent.name, sent.contentType, sent.size]),
    ).toEqual([
      ["web:default:web:main", "notes/list.txt", "list.txt", "text/plain", 10],
      ["api:default:api:main", "notes/list.txt", "list.txt", "text/plain", 10],
    ]);
  });

  it("lets a shared chat send its own folder's files and refuses it the owner's", async () => {
    const folder = GROUP_FOLDER;
    const own = await call(group, GROUP_KEY, { path: `${folder}inbox/2026-12-06/menu.txt` });
    expect(own.isError).toBeUndefined();
    for (const path of ["MEMORY.md", "inbox/2026-12-06/cat.png", `${folder}../../MEMORY.md`]) {
      const refused = await call(group, GROUP_KEY, { path });
      expect(refused.isError, path).toBe(true);
      expect(refused.content, path).toMatch(/not in this chat's own folder/);
    }
    expect(uploads.map((file) => file.name)).toEqual(["menu.txt"]);
  });

  it("refuses `..`, absolute paths and links that lead out of the workspace, the data directory's state included", async () => {
    await symlink(join(home, "state"), join(workspace, "state-link"));
    await symlink(join(home, "state", "sessions", "secret.jsonl"), join(workspace, "notes", "secret.jsonl"));
    for (const path of [
      "../state/sessions/secret.jsonl",
      join(home, "state", "sessions", "secret.jsonl"),
      "state-link/sessions/secret.jsonl",
      "notes/secret.jsonl",
    ]) {
      const result = await call(OWNER_SCOPE, OWNER_DM, { path });
      expect(result.isError, path).toBe(true);
      expect(result.content, path).toMatch(/is not allowed/);
    }
    expect(uploads).toEqual([]);
  });

  it("follows a link that stays inside the workspace, naming the real file", async () => {
    await symlink(
      join(workspace, "inbox", "2026-12-06", "cat.png"),
      join(workspace, "notes", "cat-link.png"),
    );
    const result = await call(OWNER_SCOPE, "web:default:web:main", { path: "notes/cat-link.png" });
    expect(result.content).toMatch(/^Sent inbox\/2026-12-06\/cat\.png /);
  });

  it("refuses a file over the server's limit without reading it, and says the platform's own limit", async () => {
    const big = await call(OWNER_SCOPE, OWNER_DM, { path: "notes/list.txt" }, 4);
    expect(big).toMatchObject({ isError: true });
    expect(big.content).toMatch(
      /larger than 4 B \(10 B\), the most this server sends \(ALMANAC_ATTACHMENT_MAX_MB\)/,
    );
    expect(uploads).toEqual([]);

    hubAnswer = async () => {
      throw new AttachmentTooLargeError(8, 10);
    };
    const platform = await call(OWNER_SCOPE, OWNER_DM, { path: "notes/list.txt" });
    expect(platform).toMatchObject({ isError: true });
    expect(platform.content).toBe(
      '"notes/list.txt" (text/plain, 10 B) was not sent: it is larger than 8 B, the most discord takes.',
    );
    expect(recorded).toEqual([]);
  });

  it("tells the model when the chat cannot take files, or its channel is not here, or the key is no session's", async () => {
    hubAnswer = async () => "cannot-send-files";
    const cannot = await call(OWNER_SCOPE, OWNER_DM, { path: "notes/list.txt" });
    expect(cannot).toMatchObject({ isError: true });
    expect(cannot.content).toMatch(
      /This chat \(discord\) cannot receive files from me.*paste its text into your reply/,
    );

    hubAnswer = async () => "no-channel";
    const gone = await call(OWNER_SCOPE, "telegram:default:dm:bob", { path: "notes/list.txt" });
    expect(gone.content).toMatch(/channel \(telegram\) is not connected on this server/);

    const unknown = await call(OWNER_SCOPE, "not a session key", { path: "notes/list.txt" });
    expect(unknown).toMatchObject({ isError: true, content: expect.stringMatching(/no channel I know/) });
    expect(recorded).toEqual([]);
  });

  it("refuses a missing file, a folder and a program, by what the bytes are", async () => {
    await writeFile(
      join(workspace, "notes", "tool.jpg"),
      Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(60).fill(0)]),
    );
    expect((await call(OWNER_SCOPE, OWNER_DM, { path: "notes/none.txt" })).content).toMatch(/does not exist/);
    expect((await call(OWNER_SCOPE, OWNER_DM, { path: "notes" })).content).toMatch(/is a folder/);
    expect((await call(OWNER_SCOPE, OWNER_DM, { path: "notes/tool.jpg" })).content).toMatch(
      /do not send "notes\/tool\.jpg": it is a Linux program/,
    );
    expect(uploads).toEqual([]);
  });
});
