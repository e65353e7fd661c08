import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EventClient, openLiveEvents } from "./live-events.js";
import { startTestServer, type TestServer } from "./test-server.js";

let running: TestServer;
let live: EventClient;
let catPng: Buffer;

beforeAll(async () => {
  running = await startTestServer();
  const notes = join(running.home, "workspace", "notes");
  await mkdir(notes, { recursive: true });
  catPng = await sharp({ create: { width: 8, height: 6, channels: 3, background: "#3a7" } })
    .png()
    .toBuffer();
  await writeFile(join(notes, "cat.png"), catPng);
  await writeFile(join(notes, "list.txt"), "milk\neggs\n");
  await writeFile(join(notes, "page.html"), "<!doctype html><script>alert(1)</script>");
  await writeFile(
    join(notes, "logo.svg"),
    '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
  );
  await writeFile(join(notes, 'my "best" café.png'), catPng);
  await symlink(join(running.home, "state"), join(running.home, "workspace", "state-link"));
  live = await openLiveEvents(running.server.url);
}, 30_000);
afterAll(async () => {
  live?.close();
  await running?.close();
});

/** The tool results the model was sent back in a request. */
function toolResults(request: RecordedChatRequest | undefined): string[] {
  return (request?.messages ?? []).flatMap((message) =>
    message.role === "tool" && typeof message.content === "string" ? [message.content] : [],
  );
}

const fileContent = (path: string, init?: RequestInit) =>
  running.api(`/api/files/content?path=${encodeURIComponent(path)}`, init);

describe("files out: send_file in an API conversation, and the route the console fetches them from", () => {
  it("records the file for the conversation: the live event, the tool result naming it, the call in the transcript", async () => {
    running.llm.enqueue(
      script.toolCalls([{ name: "send_file", arguments: { path: "notes/cat.png", caption: "your cat" } }]),
      script.text("Here is your cat."),
    );
    const from = live.received.length;
    const reply = await running.client.chat.completions.create({
      model: "almanac",
      user: "files",
      messages: [{ role: "user", content: "send me the cat picture" }],
    });
    expect(reply.choices[0]?.message.content).toBe("Here is your cat.");
    const event = await live.waitFor((received) => received.event === "file-sent", { from });
    expect(event.data).toEqual({
      type: "file-sent",
      sessionKey: "api:default:api:files",
      path: "notes/cat.png",
      name: "cat.png",
      contentType: "image/png",
      size: catPng.length,
      caption: "your cat",
    });
    const [, second] = running.llm.chatRequests();
    expect(toolResults(second)).toEqual([
      `Sent notes/cat.png (image/png, ${catPng.length} B); it is shown in this conversation.`,
    ]);
    const detail = (await (
      await running.api(`/api/sessions/${encodeURIComponent("api:default:api:files")}`)
    ).json()) as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
    const call = detail.messages
      .flatMap((message) => message.content)
      .find((block) => block.type === "tool_call");
    expect(call).toMatchObject({ name: "send_file" });
    expect(JSON.parse(String(call?.arguments))).toEqual({ path: "notes/cat.png", caption: "your cat" });
    expect(running.llm.rejections()).toEqual([]);
  });

  it("serves a raster image inline with its type read from the bytes, and the exact bytes", async () => {
    const response = await fileContent("notes/cat.png");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("image/png");
    expect(response.headers.get("content-disposition")).toBe(
      `inline; filename="cat.png"; filename*=UTF-8''cat.png`,
    );
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("cache-control")).toBe("private, no-store");
    expect(Buffer.from(await response.arrayBuffer()).equals(catPng)).toBe(true);
  });

  it("serves text, HTML and SVG as plain-text downloads, never as a page", async () => {
    for (const name of ["list.txt", "page.html", "logo.svg"]) {
      const response = await fileContent(`notes/${name}`);
      expect(response.status, name).toBe(200);
      expect(response.headers.get("content-type"), name).toBe("text/plain; charset=utf-8");
      expect(response.headers.get("content-disposition"), name).toMatch(/^attachment; /);
      expect(await response.text(), name).toBe(
        await readFile(join(running.home, "workspace", "notes", name), "utf8"),
      );
    }
  });

  it("names a file safely in content-disposition, its exact name percent-encoded", async () => {
    const response = await fileContent('notes/my "best" café.png');
    expect(response.headers.get("content-disposition")).toBe(
      `inline; filename="my _best_ caf_.png"; filename*=UTF-8''my%20%22best%22%20caf%C3%A9.png`,
    );
    await response.body?.cancel();
  });

  it("refuses paths out of the workspace, missing files and requests without the token", async () => {
    for (const path of [
      "../state/approvals.json",
      `${running.home}/state/approvals.json`,
      "state-link/approvals.json",
    ]) {
      const response = await fileContent(path);
      expect(response.status, path).toBe(403);
      expect(await response.json(), path).toMatchObject({ error: { code: "workspace.path_outside" } });
    }
    const missing = await fileContent("notes/none.png");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "workspace.not_found" } });
    const folder = await fileContent("notes");
    expect(folder.status).toBe(400);
    const noPath = await running.api("/api/files/content");
    expect(noPath.status).toBe(400);
    expect(await noPath.json()).toMatchObject({ error: { code: "request.invalid" } });
    const anonymous = await fetch(`${running.server.url}/api/files/content?path=notes%2Fcat.png`);
    expect(anonymous.status).toBe(401);
    await anonymous.body?.cancel();
  });
});

describe("files out: size limits", () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startTestServer({ env: { ALMANAC_ATTACHMENT_MAX_MB: "0.001" } });
    await mkdir(join(small.home, "workspace", "notes"), { recursive: true });
    await writeFile(join(small.home, "workspace", "notes", "big.txt"), "x".repeat(4096));
  }, 30_000);
  afterAll(async () => {
    await small?.close();
  });

  it("refuses a file over ALMANAC_ATTACHMENT_MAX_MB, to the model and on the route", async () => {
    small.llm.enqueue(
      script.toolCalls([{ name: "send_file", arguments: { path: "notes/big.txt" } }]),
      script.text("It is too large to send."),
    );
    await small.client.chat.completions.create({
      model: "almanac",
      user: "big",
      messages: [{ role: "user", content: "send big.txt" }],
    });
    const [result] = toolResults(small.llm.chatRequests()[1]);
    expect(result).toMatch(
      /^send_file failed: .*"notes\/big\.txt" is larger than 1\.0 KB \(4\.0 KB\), the most this server sends/,
    );
    const response = await small.api("/api/files/content?path=notes%2Fbig.txt");
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: "file.too_large" } });
  });
});

describe("files out: send_file in a Discord DM, through discord.js against the fake Discord", () => {
  let discord: FakeDiscord;
  let server: TestServer;
  beforeAll(async () => {
    discord = await startFakeDiscord();
    server = await startTestServer({
      env: {
        ALMANAC_DISCORD_TOKEN: discord.token(),
        ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
        ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
      },
    });
    await mkdir(join(server.home, "workspace", "notes"), { recursive: true });
    await writeFile(join(server.home, "workspace", "notes", "cat.png"), catPng);
    await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
  }, 30_000);
  afterAll(async () => {
    await server?.close();
    await discord?.close();
  });

  it("uploads the file to the DM with its caption, then answers", async () => {
    server.llm.enqueue(
      script.toolCalls([{ name: "send_file", arguments: { path: "notes/cat.png", caption: "your cat" } }]),
      script.text("Sent you the cat."),
    );
    discord.dispatchMessage({ where: "dm", content: "send me the cat" });
    const shown = () => discord.shown(discord.world.ids.dmChannel);
    await waitUntil(() => shown().some((message) => message.content === "Sent you the cat."), {
      timeoutMs: 10_000,
    });
    expect(shown().map((message) => [message.content, message.attachments])).toEqual([
      ["your cat", ["cat.png"]],
      ["Sent you the cat.", []],
    ]);
    const upload = discord.sent().find((message) => message.files !== undefined);
    expect(upload?.files?.map((file) => [file.name, file.contentType])).toEqual([["cat.png", "image/png"]]);
    expect(upload?.files?.[0]?.bytes.equals(catPng)).toBe(true);
    expect(toolResults(server.llm.chatRequests()[1])).toEqual([
      `Sent notes/cat.png (image/png, ${catPng.length} B) to this conversation.`,
    ]);
  });
});
