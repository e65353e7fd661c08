import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { startFakeDingTalk } from "./fake-dingtalk.js";
import { type FakeDingTalk, MEDIA_UPLOAD_LIMITS } from "./types.js";

let fake: FakeDingTalk | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function start(): Promise<FakeDingTalk> {
  fake = await startFakeDingTalk();
  return fake;
}

async function call(method: "POST" | "PUT", url: string, body: unknown, token?: string) {
  const response = await fetch(url, {
    method,
    headers: {
      "content-type": "application/json",
      ...(token === undefined ? {} : { "x-acs-dingtalk-access-token": token }),
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

async function accessToken(dingtalk: FakeDingTalk): Promise<string> {
  const { body } = await call("POST", `${dingtalk.url}/v1.0/oauth2/accessToken`, {
    appKey: dingtalk.clientId,
    appSecret: dingtalk.clientSecret,
  });
  return z.object({ accessToken: z.string() }).parse(body).accessToken;
}

async function upload(dingtalk: FakeDingTalk, token: string, type: string, file: Blob, name: string) {
  const form = new FormData();
  form.set("media", file, name);
  const response = await fetch(`${dingtalk.url}/media/upload?access_token=${token}&type=${type}`, {
    method: "POST",
    body: form,
  });
  return (await response.json()) as { errcode: number; media_id?: string };
}

describe("fake DingTalk message files", () => {
  it("names a download URL for a registered code and serves its bytes there; unknown codes are refused", async () => {
    const dingtalk = await start();
    const token = await accessToken(dingtalk);
    dingtalk.addFile("code-1", { bytes: new TextEncoder().encode("hello file"), contentType: "text/plain" });
    const route = `${dingtalk.url}/v1.0/robot/messageFiles/download`;
    const body = { downloadCode: "code-1", robotCode: dingtalk.robotCode };
    expect((await call("POST", route, body)).status).toBe(401);
    const answer = await call("POST", route, body, token);
    const { downloadUrl } = z.object({ downloadUrl: z.string() }).parse(answer.body);
    const file = await fetch(downloadUrl);
    expect(file.headers.get("content-type")).toBe("text/plain");
    expect(file.headers.get("content-length")).toBe("10");
    expect(await file.text()).toBe("hello file");
    expect(dingtalk.downloads()).toEqual([
      expect.objectContaining({ downloadCode: "code-1", bytesSent: 10, completed: true }),
    ]);
    const unknown = await call("POST", route, { ...body, downloadCode: "code-2" }, token);
    expect(unknown).toMatchObject({ status: 400, body: { code: "InvalidParameter.DownloadCode" } });
    expect((await fetch(`${dingtalk.url}/files/not-issued`)).status).toBe(404);
  });

  it("puts picture, file and voice messages in DingTalk's shape", async () => {
    const dingtalk = await start();
    const picture = dingtalk.sendRobotMessage({
      conversation: "single",
      media: { type: "picture", downloadCode: "p" },
    });
    const file = dingtalk.sendRobotMessage({
      conversation: "group",
      media: { type: "file", downloadCode: "f", fileName: "a.pdf" },
    });
    const voice = dingtalk.sendRobotMessage({
      conversation: "single",
      media: { type: "audio", downloadCode: "v", recognition: "hi", duration: 1200 },
    });
    expect(picture.payload).toMatchObject({ msgtype: "picture", content: { downloadCode: "p" } });
    expect(picture.payload).not.toHaveProperty("text");
    expect(file.payload).toMatchObject({
      msgtype: "file",
      content: { downloadCode: "f", fileName: "a.pdf" },
    });
    expect(voice.payload).toMatchObject({
      msgtype: "audio",
      content: { downloadCode: "v", recognition: "hi", duration: 1200 },
    });
  });
});

describe("fake DingTalk AI cards", () => {
  it("creates a card of its template, streams whole texts into it and records every write", async () => {
    const dingtalk = await start();
    const token = await accessToken(dingtalk);
    const create = (body: Record<string, unknown>) =>
      call("POST", `${dingtalk.url}/v1.0/card/instances/createAndDeliver`, body, token);
    const stream = (body: Record<string, unknown>) =>
      call(
        "PUT",
        `${dingtalk.url}/v1.0/card/streaming`,
        { guid: "g", key: "content", isFull: true, ...body },
        token,
      );
    const card = {
      cardTemplateId: dingtalk.cardTemplateId,
      outTrackId: "track-1",
      openSpaceId: "dtv1.card//IM_GROUP.cid-group-1==",
      cardData: { cardParamMap: { content: "Hel" } },
      imGroupOpenDeliverModel: { robotCode: dingtalk.robotCode },
    };
    expect(await create({ ...card, cardTemplateId: "other.schema" })).toMatchObject({
      status: 400,
      body: { code: "InvalidParameter.CardTemplateId" },
    });
    expect(await create(card)).toMatchObject({
      status: 200,
      body: { success: true, result: { deliverResults: [{ success: true, spaceType: "IM_GROUP" }] } },
    });
    expect((await stream({ outTrackId: "track-1", content: "Hello", isFinalize: false })).status).toBe(200);
    expect(await stream({ outTrackId: "track-9", content: "x", isFinalize: false })).toMatchObject({
      status: 400,
      body: { code: "InvalidParameter.OutTrackId" },
    });
    expect((await stream({ outTrackId: "track-1", content: "Hello!", isFinalize: true })).status).toBe(200);
    expect((await stream({ outTrackId: "track-1", content: "late", isFinalize: false })).status).toBe(400);
    const [record] = dingtalk.cards();
    expect(record).toMatchObject({
      outTrackId: "track-1",
      spaceType: "IM_GROUP",
      spaceId: "cid-group-1==",
      content: "Hello!",
      finalized: true,
    });
    expect(record?.updates.map((update) => [update.kind, update.content, update.isFinalize])).toEqual([
      ["create", "Hel", false],
      ["stream", "Hello", false],
      ["stream", "Hello!", true],
    ]);
    expect(dingtalk.rejections().map((rejection) => rejection.route)).toEqual(["card", "card", "card"]);
  });
});

describe("fake DingTalk media upload", () => {
  it("takes a multipart upload within the type's limit and lets picture and file messages name its media_id", async () => {
    const dingtalk = await start();
    const token = await accessToken(dingtalk);
    expect(await upload(dingtalk, "bad-token", "image", new Blob(["x"]), "a.png")).toMatchObject({
      errcode: 40014,
    });
    const voice = new Blob([new Uint8Array(MEDIA_UPLOAD_LIMITS.voice + 1)], { type: "audio/amr" });
    expect(await upload(dingtalk, token, "voice", voice, "v.amr")).toMatchObject({ errcode: 40006 });
    const image = await upload(dingtalk, token, "image", new Blob(["png"], { type: "image/png" }), "a.png");
    expect(image).toMatchObject({ errcode: 0, media_id: expect.stringMatching(/^@/) });
    expect(dingtalk.uploads()).toEqual([
      expect.objectContaining({
        mediaId: image.media_id,
        type: "image",
        fileName: "a.png",
        contentType: "image/png",
      }),
    ]);

    const send = (msgKey: string, msgParam: unknown) =>
      call(
        "POST",
        `${dingtalk.url}/v1.0/robot/groupMessages/send`,
        {
          robotCode: dingtalk.robotCode,
          openConversationId: "cid-1",
          msgKey,
          msgParam: JSON.stringify(msgParam),
        },
        token,
      );
    expect((await send("sampleImageMsg", { photoURL: image.media_id })).status).toBe(200);
    const file = { mediaId: image.media_id, fileName: "a.png", fileType: "png" };
    expect((await send("sampleFile", file)).status).toBe(200);
    expect((await send("sampleFile", { ...file, mediaId: "@unknown" })).status).toBe(400);
    expect(dingtalk.sent().map((sent) => [sent.msgtype, sent.mediaId, sent.fileType])).toEqual([
      ["image", image.media_id, undefined],
      ["file", image.media_id, "png"],
    ]);
  });
});
