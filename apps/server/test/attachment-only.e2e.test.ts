import { appendFile, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { lastUserText, type RecordedChatRequest, script, startScriptedLlm } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { type FakeFeishu, startFakeFeishu } from "@almanac/testkit/feishu";
import sharp from "sharp";
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

/** A small real PNG, a PDF header and an Ogg/Opus header: what the content check reads, not what the names say. */
const photo = await sharp({ create: { width: 8, height: 6, channels: 3, background: "#c33" } })
  .png()
  .toBuffer();
const pdf = Buffer.from("%PDF-1.4\n% a report\n1 0 obj << >> endobj\ntrailer << >>\n%%EOF\n");
const opus = Buffer.concat([
  Buffer.from("OggS"),
  Buffer.alloc(24),
  Buffer.from("OpusHead"),
  Buffer.alloc(400, 1),
]);

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

    // Each is downloaded, checked by its content and saved; the model gets the text note (this model cannot see).
    const image = await send({
      where: "dm",
      content: "",
      attachments: [{ filename: "photo.png", contentType: "image/png", bytes: photo }],
    });
    expect(image).toMatch(
      /^echo: \[The person sent an attachment; .*\n- image "photo\.png" \(image\/png, .*\), saved as inbox\/\d{4}-\d\d-\d\d\/photo\.png/s,
    );
    expect(image).not.toContain("[1 image]");
    const file = await send({
      where: "dm",
      content: "",
      attachments: [{ filename: "report.pdf", contentType: "application/pdf", bytes: pdf }],
    });
    expect(file).toMatch(/file "report\.pdf" \(application\/pdf, .*\), saved as inbox\/.*\/report\.pdf/);
    const voice = await send({ where: "dm", content: "", voice: { durationSecs: 4.2 } });
    // No transcription endpoint here: the person is told, the recording kept, and the model still gets a message.
    expect(voice).toContain("Voice messages cannot be transcribed here");
    expect(voice).toMatch(/echo: \[The person sent an attachment;/);
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
        // Replies sent whole, so each is one message to read (streamed cards: feishu-attachments.e2e).
        ALMANAC_STREAM_REPLIES: "none",
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

    fake.addResource("om_photo", "img_v3_0001", { type: "image", bytes: photo });
    expect(
      await send({ chatType: "p2p", messageId: "om_photo", image: { imageKey: "img_v3_0001" } }),
    ).toMatch(/- image \(image\/png, \d+ B\), saved as inbox\/.*\/image\.png/);
    fake.addResource("om_plan", "file_v3_0002", { type: "file", bytes: pdf, fileName: "plan.pdf" });
    expect(
      await send({
        chatType: "p2p",
        messageId: "om_plan",
        file: { fileKey: "file_v3_0002", fileName: "plan.pdf" },
      }),
    ).toMatch(/file \\"plan\.pdf\\" \(application\/pdf/);
    fake.addResource("om_voice", "file_v3_0003", { type: "file", bytes: opus });
    expect(
      await send({
        chatType: "p2p",
        messageId: "om_voice",
        audio: { fileKey: "file_v3_0003", durationMs: 3_000 },
      }),
    ).toContain("Voice messages cannot be transcribed here");
    // A resource the platform will not hand over: the person is told, and the message is still answered.
    expect(await send({ chatType: "p2p", image: { imageKey: "img_v3_gone" } })).toContain(
      "I could not take the image: the download failed.",
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
