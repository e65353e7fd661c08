import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeFeishu, startFakeFeishu } from "./fake-feishu.js";

// The SDK maps loggerLevel 0 (fatal) to info, so silence it with a logger instead.
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

let fake: FakeFeishu;
let now = 1_800_000_000_000;

beforeEach(async () => {
  now = 1_800_000_000_000;
  fake = await startFakeFeishu({ clock: () => now });
});
afterEach(async () => {
  await fake.close();
});

const client = () =>
  new lark.Client({
    appId: fake.appId,
    appSecret: fake.appSecret,
    domain: fake.baseUrl,
    cache: new lark.DefaultCache(),
    logger: quiet,
  });

/** Authorization header with a fresh tenant token, for requests the SDK's helpers do not make. */
async function bearer(sdk: lark.Client): Promise<string> {
  return `Bearer ${String(await sdk.tokenManager.getTenantAccessToken())}`;
}

function httpFailure(error: unknown): { status: unknown; data: unknown } {
  const response: unknown = Reflect.get(Object(error), "response");
  return { status: Reflect.get(Object(response), "status"), data: Reflect.get(Object(response), "data") };
}

const sendCard = async (sdk: lark.Client, card: unknown) => {
  const result = await sdk.im.message.create({
    params: { receive_id_type: "chat_id" },
    data: { receive_id: "oc_group_1", msg_type: "interactive", content: JSON.stringify(card) },
  });
  return result.data?.message_id ?? "";
};
const markdownCard = (content: string, shared = true) => ({
  ...(shared ? { config: { update_multi: true } } : {}),
  elements: [{ tag: "markdown", content }],
});

describe("fake Feishu message resources", () => {
  it("serves the bytes registered for a message's key, by the type Feishu asks for", async () => {
    const bytes = new Uint8Array([1, 2, 3, 4, 5]);
    fake.addResource("om_1", "file_v3_abc", {
      bytes,
      type: "file",
      contentType: "application/pdf",
      fileName: "report.pdf",
    });
    const sdk = client();
    const authorization = await bearer(sdk);
    const url = `${fake.baseUrl}/open-apis/im/v1/messages/om_1/resources/file_v3_abc`;
    const ok = await fetch(`${url}?type=file`, { headers: { authorization } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toBe("application/pdf");
    expect(ok.headers.get("content-length")).toBe("5");
    expect(ok.headers.get("content-disposition")).toContain("report.pdf");
    expect(new Uint8Array(await ok.arrayBuffer())).toEqual(bytes);

    const wrongType = await fetch(`${url}?type=image`, { headers: { authorization } });
    expect(wrongType.status).toBe(400);
    const noType = await fetch(url, { headers: { authorization } });
    expect(await noType.json()).toMatchObject({ code: 234001 });
    const unknown = await fetch(`${url.replace("om_1", "om_2")}?type=file`, { headers: { authorization } });
    expect(await unknown.json()).toMatchObject({ code: 234003 });
    const anonymous = await fetch(`${url}?type=file`);
    expect(anonymous.status).toBe(400);
  });

  it("the SDK's own resource helper downloads through the route", async () => {
    fake.addResource("om_img", "img_v3_1", { bytes: new Uint8Array([9, 9]), type: "image" });
    const resource = await client().im.messageResource.get({
      path: { message_id: "om_img", file_key: "img_v3_1" },
      params: { type: "image" },
    });
    const chunks: Buffer[] = [];
    for await (const chunk of resource.getReadableStream()) chunks.push(chunk as Buffer);
    expect([...Buffer.concat(chunks)]).toEqual([9, 9]);
  });
});

describe("fake Feishu uploads and file messages", () => {
  it("takes a multipart image and a file, answers their keys, and sends messages naming them", async () => {
    const sdk = client();
    const authorization = await bearer(sdk);
    const image = new FormData();
    image.append("image_type", "message");
    image.append("image", new Blob([new Uint8Array([137, 80, 78, 71])]), "chart.png");
    const imageAnswer = await fetch(`${fake.baseUrl}/open-apis/im/v1/images`, {
      method: "POST",
      headers: { authorization },
      body: image,
    });
    const imageKey = String(((await imageAnswer.json()) as { data: { image_key: string } }).data.image_key);
    const file = new FormData();
    file.append("file_type", "pdf");
    file.append("file_name", "report.pdf");
    file.append("file", new Blob([new Uint8Array([37, 80, 68, 70])]), "report.pdf");
    const fileAnswer = await fetch(`${fake.baseUrl}/open-apis/im/v1/files`, {
      method: "POST",
      headers: { authorization },
      body: file,
    });
    const fileKey = String(((await fileAnswer.json()) as { data: { file_key: string } }).data.file_key);
    expect(imageKey).toMatch(/^img_v3_/);
    expect(fileKey).toMatch(/^file_v3_/);
    expect(fake.uploads()).toMatchObject([
      { kind: "image", key: imageKey, type: "message", fileName: "chart.png" },
      { kind: "file", key: fileKey, type: "pdf", fileName: "report.pdf" },
    ]);
    expect([...(fake.uploads()[1]?.bytes ?? [])]).toEqual([37, 80, 68, 70]);

    const send = (msgType: string, content: unknown) =>
      sdk.im.message.create({
        params: { receive_id_type: "chat_id" },
        data: { receive_id: "oc_group_1", msg_type: msgType, content: JSON.stringify(content) },
      });
    await send("image", { image_key: imageKey });
    await send("file", { file_key: fileKey });
    expect(fake.sent()).toMatchObject([
      { msgType: "image", content: { image_key: imageKey } },
      { msgType: "file", content: { file_key: fileKey } },
    ]);
    const unknown = await send("image", { image_key: "img_v3_never_uploaded" }).catch(
      (caught: unknown) => caught,
    );
    expect(httpFailure(unknown)).toMatchObject({ status: 400, data: { code: 230001 } });
  });

  it("refuses an upload without its fields, an empty file, and a file over 30 MB", async () => {
    const authorization = await bearer(client());
    const post = async (fields: Record<string, string>, bytes: Uint8Array) => {
      const form = new FormData();
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      form.append("file", new Blob([new Uint8Array(bytes)]), "x.bin");
      const answer = await fetch(`${fake.baseUrl}/open-apis/im/v1/files`, {
        method: "POST",
        headers: { authorization },
        body: form,
      });
      return { status: answer.status, body: (await answer.json()) as { code: number } };
    };
    const fields = { file_type: "stream", file_name: "x.bin" };
    expect(await post({ file_type: "stream" }, new Uint8Array([1]))).toMatchObject({
      body: { code: 234001 },
    });
    expect(await post(fields, new Uint8Array())).toMatchObject({ body: { code: 234010 } });
    const big = await post(fields, new Uint8Array(30 * 1024 * 1024 + 1));
    expect(big).toMatchObject({ status: 400, body: { code: 234006 } });
    expect(fake.uploads()).toEqual([]);
  });
});

describe("fake Feishu card updates", () => {
  it("records each update with its time and shows the newest card", async () => {
    const sdk = client();
    const messageId = await sendCard(sdk, markdownCard("one"));
    await sdk.im.message.patch({
      path: { message_id: messageId },
      data: { content: JSON.stringify(markdownCard("two")) },
    });
    now += 1500;
    await sdk.im.message.patch({
      path: { message_id: messageId },
      data: { content: JSON.stringify(markdownCard("three")) },
    });
    expect(fake.cardUpdates().map((update) => [update.at, update.accepted])).toEqual([
      [1_800_000_000_000, true],
      [1_800_000_001_500, true],
    ]);
    expect(fake.card(messageId)).toEqual(markdownCard("three"));
    expect(fake.sent()[0]?.content).toEqual(markdownCard("one"));
    expect(fake.shown()[0]?.content).toEqual(markdownCard("three"));
    await sdk.im.message.delete({ path: { message_id: messageId } });
    expect(fake.shown()).toEqual([]);
  });

  it("refuses to update a card sent without update_multi, or to take update_multi away", async () => {
    const sdk = client();
    const unshared = await sendCard(sdk, markdownCard("private", false));
    const refused = await sdk.im.message
      .patch({ path: { message_id: unshared }, data: { content: JSON.stringify(markdownCard("new")) } })
      .catch((caught: unknown) => caught);
    expect(httpFailure(refused)).toMatchObject({ status: 400, data: { code: 230099 } });
    expect(fake.card(unshared)).toEqual(markdownCard("private", false));

    const shared = await sendCard(sdk, markdownCard("shared"));
    const takenAway = await sdk.im.message
      .patch({ path: { message_id: shared }, data: { content: JSON.stringify(markdownCard("new", false)) } })
      .catch((caught: unknown) => caught);
    expect(httpFailure(takenAway)).toMatchObject({ status: 400, data: { code: 230099 } });
    expect(fake.cardUpdates().map((update) => update.accepted)).toEqual([false, false]);
  });

  it("refuses a sixth update of one card within a second, and a recalled card", async () => {
    const sdk = client();
    const messageId = await sendCard(sdk, markdownCard("0"));
    const patch = (content: string) =>
      sdk.im.message.patch({
        path: { message_id: messageId },
        data: { content: JSON.stringify(markdownCard(content)) },
      });
    for (const text of ["1", "2", "3", "4", "5"]) await patch(text);
    const sixth = await patch("6").catch((caught: unknown) => caught);
    expect(httpFailure(sixth)).toMatchObject({ status: 400, data: { code: 230020 } });
    now += 1000;
    await patch("7");
    await sdk.im.message.delete({ path: { message_id: messageId } });
    expect(fake.recalled()).toEqual([messageId]);
    const gone = await patch("8").catch((caught: unknown) => caught);
    expect(httpFailure(gone)).toMatchObject({ status: 400, data: { code: 230011 } });
  });
});
