import * as lark from "@larksuiteoapi/node-sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FakeFeishu, startFakeFeishu } from "./fake-feishu.js";

// The SDK maps loggerLevel 0 (fatal) to info, so silence it with a logger instead.
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };
const HOUR_MS = 60 * 60_000;

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

const send = (sdk: lark.Client, text: string, uuid: string) =>
  sdk.im.message.create({
    params: { receive_id_type: "open_id" },
    data: { receive_id: "ou_user_1", msg_type: "text", content: JSON.stringify({ text }), uuid },
  });

describe("fake Feishu uuid window", () => {
  it("answers a uuid repeated within the hour with the first message, and posts anew after it", async () => {
    const sdk = client();
    const first = await send(sdk, "Stretch now.", "TABCDE-1796520000000-0");
    now += HOUR_MS;
    const repeat = await send(sdk, "Stretch now.", "TABCDE-1796520000000-0");
    expect(repeat.data?.message_id).toBe(first.data?.message_id);
    expect(fake.sent()).toHaveLength(1);
    now += 1;
    const late = await send(sdk, "Stretch now.", "TABCDE-1796520000000-0");
    expect(late.data?.message_id).not.toBe(first.data?.message_id);
    expect(fake.sent()).toHaveLength(2);
  });

  it("refuses a uuid longer than 50 characters, as Feishu does", async () => {
    const answer = await send(client(), "x", "u".repeat(51)).catch((error: unknown) =>
      Reflect.get(Object(Reflect.get(Object(error), "response")), "data"),
    );
    expect(answer).toMatchObject({ code: 230001 });
    expect(fake.sent()).toEqual([]);
  });
});

describe("fake Feishu held answers", () => {
  it("creates the next message but answers only when released", async () => {
    const sdk = client();
    const held = fake.holdNextMessageResponse();
    let answered = false;
    const pending = send(sdk, "held", "h-1").then((result) => {
      answered = true;
      return result;
    });
    const message = await held.message;
    expect(message).toMatchObject({ kind: "create", receiveId: "ou_user_1", content: { text: "held" } });
    expect(fake.sent()).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    held.release();
    expect((await pending).data?.message_id).toBe(message.messageId);
  });

  it("does not hold a repeat answered from its uuid", async () => {
    const sdk = client();
    const first = await send(sdk, "once", "h-2");
    const held = fake.holdNextMessageResponse();
    const repeat = await send(sdk, "once", "h-2");
    expect(repeat.data?.message_id).toBe(first.data?.message_id);
    held.release();
    expect(fake.sent()).toHaveLength(1);
  });
});
