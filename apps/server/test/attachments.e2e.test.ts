import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import sharp from "sharp";
import { afterEach, describe, expect, it } from "vitest";
import { imageParts, inboxFiles } from "./attachment-helpers.js";
import { startTestServer, type TestServer } from "./test-server.js";

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** A photo-sized PNG as an API client sends it: a base64 data URL. */
async function photoDataUrl(width: number, height: number): Promise<string> {
  const png = await sharp({ create: { width, height, channels: 3, background: { r: 200, g: 40, b: 40 } } })
    .png()
    .toBuffer();
  return `data:image/png;base64,${png.toString("base64")}`;
}

async function transcriptText(home: string): Promise<string> {
  const sessions = join(home, "sessions");
  const names = (await readdir(sessions)).filter((name) => name.endsWith(".jsonl"));
  return (await Promise.all(names.map((name) => readFile(join(sessions, name), "utf8")))).join("\n");
}

describe("images through the OpenAI-compatible endpoint", () => {
  it("vision on: the model gets a resized image part, the transcript only the file's reference", async () => {
    running = await startTestServer({ env: { ALMANAC_MODEL_VISION: "true" } });
    const server = running;
    server.llm.enqueue(script.text("A red square."), script.text("Still red."));
    const photo = await photoDataUrl(3000, 2000);
    const reply = await server.client.chat.completions.create({
      model: "almanac",
      user: "vision",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: photo } },
          ],
        },
      ],
    });
    expect(reply.choices[0]?.message.content).toBe("A red square.");
    const [sent] = imageParts(server.llm.chatRequests()[0]);
    expect(sent?.startsWith("data:image/jpeg;base64,")).toBe(true);
    const shown = await sharp(Buffer.from(sent?.slice(sent.indexOf(",") + 1) ?? "", "base64")).metadata();
    expect([shown.width, shown.height]).toEqual([1568, 1045]);
    expect(lastUserText(server.llm.chatRequests()[0])).toMatch(
      /saved as inbox\/\d{4}-\d{2}-\d{2}\/image\.png; shown below/,
    );

    const files = await inboxFiles(server.home);
    expect(files).toHaveLength(1);
    const saved = await readFile(join(server.home, "workspace", "inbox", files[0] ?? ""));
    expect(saved.toString("base64")).toBe(photo.slice(photo.indexOf(",") + 1));
    const transcript = await transcriptText(server.home);
    expect(transcript).toContain(`"url":"almanac-file:inbox/${files[0]}"`);
    expect(transcript).not.toContain("base64");

    // The next turn sends the history's image again, from the file.
    await server.client.chat.completions.create({
      model: "almanac",
      user: "vision",
      messages: [{ role: "user", content: "and now?" }],
    });
    const history = server.llm.chatRequests()[1]?.messages ?? [];
    expect(JSON.stringify(history)).toContain("data:image/jpeg;base64,");
    expect(server.llm.rejections()).toEqual([]);
  });

  it("vision off: the model gets a note with the saved path and never an image part", async () => {
    running = await startTestServer();
    const server = running;
    server.llm.enqueue(script.text("I cannot see it, but it is saved."));
    await server.client.chat.completions.create({
      model: "almanac",
      user: "blind",
      messages: [
        { role: "user", content: [{ type: "image_url", image_url: { url: await photoDataUrl(64, 64) } }] },
      ],
    });
    const request = server.llm.chatRequests()[0];
    expect(imageParts(request)).toEqual([]);
    expect(JSON.stringify(request?.messages)).not.toContain("image_url");
    expect(lastUserText(request)).toMatch(
      /- image \(image\/png, \d+ B\), saved as inbox\/\d{4}-\d{2}-\d{2}\/image\.png; you cannot see images/,
    );
  });

  it("refuses a reference to a server file, and says so for a picture over the size limit while answering the text", async () => {
    running = await startTestServer({ env: { ALMANAC_ATTACHMENT_MAX_MB: "0.01" } });
    const server = running;
    const forged = await server.api("/v1/chat/completions", {
      method: "POST",
      body: JSON.stringify({
        model: "almanac",
        messages: [
          { role: "user", content: [{ type: "image_url", image_url: { url: "almanac-file:MEMORY.md" } }] },
        ],
      }),
    });
    expect(forged.status).toBe(400);
    expect(await forged.json()).toMatchObject({ error: { code: "request.invalid" } });

    server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    const noisy = await sharp({
      create: {
        width: 200,
        height: 200,
        channels: 3,
        background: "#000",
        noise: { type: "gaussian", mean: 128, sigma: 60 },
      },
    })
      .png()
      .toBuffer();
    const reply = await server.client.chat.completions.create({
      model: "almanac",
      user: "big",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Also, what is 2+2?" },
            { type: "image_url", image_url: { url: `data:image/png;base64,${noisy.toString("base64")}` } },
          ],
        },
      ],
    });
    const text = reply.choices[0]?.message.content ?? "";
    expect(text).toMatch(
      /^_I could not take the image: it is larger than 10 KB \(\d+ KB\)\._\n\necho: Also, what is 2\+2\?/,
    );
    expect(await inboxFiles(server.home)).toEqual([]);
  });

  it("the console takes files with a message, saved in its conversation's inbox", async () => {
    running = await startTestServer();
    const server = running;
    server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
    const response = await server.api("/api/console/chat", {
      method: "POST",
      body: JSON.stringify({
        conversation: "files",
        message: "",
        attachments: [
          { name: "list.txt", data: `data:text/plain;base64,${Buffer.from("milk").toString("base64")}` },
        ],
      }),
    });
    expect(response.status).toBe(200);
    const events = (await response.text()).split("\n").filter((line) => line.startsWith("data: "));
    const done = JSON.parse(events.at(-1)?.slice(6) ?? "{}") as { type?: string; text?: string };
    expect(done.type).toBe("done");
    expect(done.text).toMatch(
      /file "list\.txt" \(text\/plain, 4 B\), saved as inbox\/\d{4}-\d{2}-\d{2}\/list\.txt/,
    );
    expect((await inboxFiles(server.home)).map((file) => file.split("/")[1])).toEqual(["list.txt"]);
  });
});
