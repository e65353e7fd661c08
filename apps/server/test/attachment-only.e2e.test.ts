import { appendFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lastUserText, type RecordedChatRequest, script, startScriptedLlm } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { type FakeFeishu, startFakeFeishu } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, TEST_MODEL_KEY, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
let discord: FakeDiscord | undefined;
let feishu: FakeFeishu | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await discord?.close();
  discord = undefined;
  await feishu?.close();
  feishu = undefined;
});

/** Echoes what the model was shown as the newest user message (text parts, and a marker per image part). */
function echo(request: RecordedChatRequest): ReturnType<typeof script.text> {
  const user = request.messages.findLast((message) => message.role === "user");
  const images = Array.isArray(user?.content)
    ? user.content.filter((part) => JSON.stringify(part).includes('"image_url"')).length
    : 0;
  return script.text(`echo: ${lastUserText(request)}${images > 0 ? ` [${images} image]` : ""}`);
}

describe("a message that is only an attachment", () => {
  it("Discord: an image, a file and a voice message each get a reply, and so does the text after them", async () => {
    const fake = await startFakeDiscord();
    discord = fake;
    running = await startTestServer({
      env: {
        ALMANAC_DISCORD_TOKEN: fake.token(),
        ALMANAC_DISCORD_API_BASE_URL: fake.apiUrl,
        ALMANAC_DISCORD_ALLOW_FROM: fake.world.user.id,
      },
    });
    const server = running;
    server.llm.setFallback(echo);
    await waitUntil(() => fake.activeConnections() === 1, { timeoutMs: 10_000 });
    const send = async (input: Parameters<FakeDiscord["dispatchMessage"]>[0]): Promise<string> => {
      const before = fake.sent().length;
      fake.dispatchMessage(input);
      await waitUntil(() => fake.sent().length > before, { timeoutMs: 10_000 });
      return fake.sent().at(-1)?.content ?? "";
    };

    const image = await send({
      where: "dm",
      content: "",
      attachments: [{ filename: "photo.png", contentType: "image/png", size: 52_000 }],
    });
    // Images are files first: one the adapter cannot download is described with its link, never passed on as a
    // remote image part (the platform's links expire, and a text-only model must never get one).
    expect(image).toContain("- image, link: https://cdn.discordapp.com/");
    expect(image).not.toContain("[1 image]");
    const file = await send({
      where: "dm",
      content: "",
      attachments: [{ filename: "report.pdf", contentType: "application/pdf", size: 1_250_000 }],
    });
    expect(file).toContain('file "report.pdf" (application/pdf, 1.2 MB), link: https://cdn.discordapp.com/');
    expect(file).toContain("did not download");
    const voice = await send({ where: "dm", content: "", voice: { durationSecs: 4.2 } });
    expect(voice).toContain('voice message "voice-message.ogg" (audio/ogg, 18 KB, 4 s)');
    const text = await send({ where: "dm", content: "and now in words" });
    expect(text).toBe("echo: and now in words");
    expect(server.llm.rejections()).toEqual([]);
  }, 40_000);

  it("Feishu: an image, a file and a voice note each get a reply, and so does the text after them", async () => {
    const fake = await startFakeFeishu();
    feishu = fake;
    running = await startTestServer({
      env: {
        ALMANAC_FEISHU_APP_ID: fake.appId,
        ALMANAC_FEISHU_APP_SECRET: fake.appSecret,
        ALMANAC_FEISHU_DOMAIN: fake.baseUrl,
        ALMANAC_FEISHU_ALLOW_FROM: "ou_user_1",
      },
    });
    const server = running;
    server.llm.setFallback(echo);
    await fake.waitForConnection(1, 10_000);
    const send = async (spec: Parameters<FakeFeishu["sendEvent"]>[0]): Promise<string> => {
      const before = fake.sent().length;
      fake.sendEvent(spec);
      const sent = await fake.waitForSent(before + 1, 10_000);
      return JSON.stringify(sent.at(-1)?.content);
    };

    expect(await send({ chatType: "p2p", image: { imageKey: "img_v3_0001" } })).toContain(
      "did not download it",
    );
    expect(
      await send({ chatType: "p2p", file: { fileKey: "file_v3_0002", fileName: "plan.xlsx" } }),
    ).toContain('file \\"plan.xlsx\\"');
    expect(await send({ chatType: "p2p", audio: { fileKey: "file_v3_0003", durationMs: 3_000 } })).toContain(
      "voice message (3 s)",
    );
    expect(await send({ chatType: "p2p", text: "and now in words" })).toContain("echo: and now in words");
    expect(server.llm.rejections()).toEqual([]);
  }, 40_000);

  it("OpenAI endpoint: an empty message is refused with a 400 and not stored, and the conversation goes on", async () => {
    running = await startTestServer();
    const server = running;
    server.llm.setFallback(echo);
    for (const content of [[], "", "   "]) {
      const refused = await server.api("/v1/chat/completions", {
        method: "POST",
        body: JSON.stringify({ model: "almanac", user: "empty", messages: [{ role: "user", content }] }),
      });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatchObject({ error: { code: "request.invalid" } });
    }
    const reply = await server.client.chat.completions.create({
      model: "almanac",
      user: "empty",
      messages: [{ role: "user", content: "plain text" }],
    });
    expect(reply.choices[0]?.message.content).toBe("echo: plain text");
    expect(server.llm.rejections()).toEqual([]);
    expect(server.llm.chatRequests()).toHaveLength(1);
  });

  it("a transcript that already holds an empty user message loads, and the next turn succeeds", async () => {
    const llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
    const home = await mkdtemp(join(tmpdir(), "almanac-empty-history-"));
    try {
      llm.setFallback(echo);
      running = await startTestServer({ home, llm });
      await running.client.chat.completions.create({
        model: "almanac",
        user: "healed",
        messages: [{ role: "user", content: "first" }],
      });
      await running.close();
      // What an earlier version stored for a Feishu picture: a user message with no content, whose turn failed.
      const sessions = join(home, "sessions");
      const [transcript] = (await readdir(sessions)).filter((name) => name.endsWith(".jsonl"));
      const empty = {
        key: "api:default:api:healed",
        message: { id: "empty-user-1", role: "user", timestamp: Date.now(), content: [], marks: [] },
      };
      await appendFile(join(sessions, transcript ?? "missing.jsonl"), `${JSON.stringify(empty)}\n`);
      running = await startTestServer({ home, llm });
      const reply = await running.client.chat.completions.create({
        model: "almanac",
        user: "healed",
        messages: [{ role: "user", content: "second" }],
      });
      expect(reply.choices[0]?.message.content).toBe("echo: second");
      expect(llm.rejections()).toEqual([]);
      const shown = llm
        .chatRequests()
        .at(-1)
        ?.messages.filter((message) => message.role === "user");
      expect(shown?.map((message) => message.content)).toEqual(["first", "(empty message)", "second"]);
    } finally {
      await running?.close();
      running = undefined;
      await llm.close();
      await rm(home, { recursive: true, force: true });
    }
  });
});
