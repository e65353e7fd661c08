import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeDiscord, startFakeDiscord } from "./fake-discord.js";

let fake: FakeDiscord;
let now: number;

beforeEach(async () => {
  now = Date.now();
  fake = await startFakeDiscord({ clock: () => now, uploadLimitBytes: 1000 });
});
afterEach(async () => {
  await fake.close();
});

const auth = () => ({ authorization: `Bot ${fake.token()}` });
const api = (path: string, init: RequestInit = {}) =>
  fetch(`${fake.apiUrl}/v10${path}`, { ...init, headers: { ...auth(), ...init.headers } });
const json = (method: string, path: string, body: unknown) =>
  api(path, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
const messagesOf = (channel: string) => `/channels/${channel}/messages`;

/** Posts a message as the bot and returns its id. */
async function post(content: string, channel = fake.world.ids.channel): Promise<string> {
  const response = await json("POST", messagesOf(channel), { content });
  const body = (await response.json()) as { id: string };
  return body.id;
}

describe("fake Discord CDN", () => {
  it("serves a dispatched attachment's bytes at the signed URL the message carries, and 404 for a tampered one", async () => {
    const bytes = new Uint8Array([1, 2, 3, 250, 251]);
    const event = fake.dispatchMessage({
      where: "dm",
      content: "",
      attachments: [{ filename: "data bits.bin", contentType: "application/octet-stream", bytes }],
    });
    const [attachment] = event.d.attachments as { url: string; size: number; proxy_url: string }[];
    expect(attachment?.size).toBe(5);
    expect(attachment?.url).toMatch(
      /^http:\/\/127\.0\.0\.1:\d+\/attachments\/\d+\/\d+\/data%20bits\.bin\?ex=/,
    );
    const served = await fetch(attachment?.url ?? "");
    expect(served.status).toBe(200);
    expect(served.headers.get("content-type")).toBe("application/octet-stream");
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);

    const tampered = await fetch((attachment?.url ?? "").replace(/hm=[0-9a-f]+/, "hm=0"));
    expect(tampered.status).toBe(404);
    expect(await tampered.text()).toBe("This content is no longer available.");
    expect(fake.cdnRequests().map((request) => [request.status, request.authorization])).toEqual([
      [200, false],
      [404, false],
    ]);
  });

  it("stops serving a URL once it expired (24 hours, by the fake's clock)", async () => {
    const event = fake.dispatchMessage({ where: "dm", content: "", attachments: [{ filename: "a.txt" }] });
    const [attachment] = event.d.attachments as { url: string }[];
    expect((await fetch(attachment?.url ?? "")).status).toBe(200);
    now += 24 * 60 * 60_000;
    expect((await fetch(attachment?.url ?? "")).status).toBe(404);
  });

  it("states the given size while serving the given bytes, for payloads that lie", async () => {
    const event = fake.dispatchMessage({
      where: "dm",
      content: "",
      attachments: [{ filename: "a.bin", bytes: new Uint8Array(300), size: 3 }],
    });
    const [attachment] = event.d.attachments as { url: string; size: number }[];
    expect(attachment?.size).toBe(3);
    expect((await (await fetch(attachment?.url ?? "")).arrayBuffer()).byteLength).toBe(300);
  });
});

describe("fake Discord message edits", () => {
  it("edits the bot's message, records the edit with the fake's time, and dispatches MESSAGE_UPDATE", async () => {
    const channel = fake.world.ids.channel;
    const id = await post("draft");
    now += 1500;
    const edited = await json("PATCH", `${messagesOf(channel)}/${id}`, { content: "final" });
    expect(edited.status).toBe(200);
    expect(await edited.json()).toMatchObject({ id, content: "final", edited_timestamp: expect.any(String) });
    expect(fake.edits()).toEqual([{ channelId: channel, messageId: id, content: "final", at: now }]);
    expect(fake.message(id)).toMatchObject({ content: "final" });
    expect(fake.shown(channel)).toEqual([
      { id, channelId: channel, content: "final", attachments: [], edited: true },
    ]);
    expect(fake.sent()[0]?.content).toBe("draft");
    await expect.poll(() => fake.events().map((event) => event.t)).toContain("MESSAGE_UPDATE");
  });

  it("refuses what Discord refuses: another's message, another channel, over 2000 characters, nothing left", async () => {
    const { channel, thread } = fake.world.ids;
    const id = await post("mine");
    const users = fake.dispatchMessage({ where: "channel", content: "theirs" });
    const cases: [string, unknown, number, number][] = [
      [`${messagesOf(channel)}/${String(users.d.id)}`, { content: "x" }, 403, 50005],
      [`${messagesOf(thread)}/${id}`, { content: "x" }, 404, 10008],
      [`${messagesOf(channel)}/${id}`, { content: "a".repeat(2001) }, 400, 50035],
      [`${messagesOf(channel)}/${id}`, { content: "" }, 400, 50006],
      [`${messagesOf(channel)}/${id}`, { content: 42 }, 400, 50035],
    ];
    for (const [path, body, status, code] of cases) {
      const response = await json("PATCH", path, body);
      expect([path, response.status, ((await response.json()) as { code: number }).code]).toEqual([
        path,
        status,
        code,
      ]);
    }
    expect(fake.edits()).toEqual([]);
  });

  it("deletes the bot's message, and an edit of a message deleted by someone else is 404 Unknown Message", async () => {
    const channel = fake.world.ids.channel;
    const first = await post("one");
    const second = await post("two");
    const deleted = await api(`${messagesOf(channel)}/${first}`, { method: "DELETE" });
    expect(deleted.status).toBe(204);
    fake.deleteMessage(second);
    const edit = await json("PATCH", `${messagesOf(channel)}/${second}`, { content: "two!" });
    expect(edit.status).toBe(404);
    expect(await edit.json()).toEqual({ message: "Unknown Message", code: 10008 });
    expect(fake.shown(channel)).toEqual([]);
    expect(fake.deletions().map((deletion) => deletion.by)).toEqual(["bot", "someone-else"]);
    await expect.poll(() => fake.events().filter((event) => event.t === "MESSAGE_DELETE").length).toBe(2);
  });
});

describe("fake Discord uploads", () => {
  /** A multipart message create, as @discordjs/rest sends one. */
  function upload(files: { name: string; bytes: Uint8Array; type?: string }[], payload: unknown) {
    const form = new FormData();
    for (const [index, file] of files.entries()) {
      form.append(
        `files[${index}]`,
        new Blob([Buffer.from(file.bytes)], { type: file.type ?? "" }),
        file.name,
      );
    }
    form.append("payload_json", JSON.stringify(payload));
    return api(messagesOf(fake.world.ids.channel), { method: "POST", body: form });
  }

  it("creates a message with the uploaded file, records its bytes and serves it from the CDN", async () => {
    const bytes = new Uint8Array([0, 255, 13, 10, 45, 45, 1]);
    const response = await upload([{ name: "raw.bin", bytes, type: "application/octet-stream" }], {
      content: "the file",
      attachments: [{ id: 0, filename: "renamed.bin" }],
    });
    expect(response.status).toBe(200);
    const message = (await response.json()) as {
      attachments: { filename: string; url: string; size: number }[];
    };
    expect(message.attachments).toMatchObject([{ filename: "renamed.bin", size: 7 }]);
    const [sent] = fake.sent();
    expect(sent).toMatchObject({
      content: "the file",
      files: [{ name: "renamed.bin", contentType: "application/octet-stream" }],
    });
    expect(new Uint8Array(sent?.files?.[0]?.bytes ?? [])).toEqual(bytes);
    const served = await fetch(message.attachments[0]?.url ?? "");
    expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);
  });

  it("accepts a file without content, and refuses one over the upload limit (413) or an unknown attachment id", async () => {
    expect((await upload([{ name: "a.txt", bytes: new Uint8Array(10) }], {})).status).toBe(200);
    const tooBig = await upload([{ name: "big.bin", bytes: new Uint8Array(1001) }], { content: "x" });
    expect(tooBig.status).toBe(413);
    expect(await tooBig.json()).toEqual({ message: "Request entity too large", code: 40005 });
    const unknown = await upload([{ name: "a.txt", bytes: new Uint8Array(1) }], {
      content: "x",
      attachments: [{ id: 3, filename: "b.txt" }],
    });
    expect(unknown.status).toBe(400);
    expect(fake.sent()).toHaveLength(1);
  });
});
