import { type InboundMessage, isAlmanacError } from "@almanac/core";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, type HarnessOptions, startHarness } from "../test/adapter-harness.js";
import { feishuChannel } from "./descriptor.js";
import { FeishuApiError } from "./errors.js";
import { createFeishuAdapter } from "./feishu-adapter.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

const start = async (options: HarnessOptions = {}) => {
  harness = await startHarness({
    ...options,
    settings: { mode: "webhook", verificationToken: "vt", ...options.settings },
  });
  return harness;
};

const dm = { sessionKey: "feishu:default:dm:ou_user_1", text: "ping" };
const question: InboundMessage = {
  sessionKey: dm.sessionKey,
  channel: "feishu",
  id: "om_question",
  account: "default",
  conversation: { kind: "dm", id: "oc_p2p_ou_user_1" },
  sender: { id: "ou_user_1" },
  mentioned: true,
  text: "hi",
  receivedAt: 0,
};

describe("FeishuAdapter.send", () => {
  it("sends to a user's direct chat by open_id and to a group by chat_id when there is nothing to reply to", async () => {
    const { adapter, fake } = await start();
    await adapter.send(dm);
    await adapter.send({ sessionKey: "feishu:default:group:oc_team", text: "hello team" });
    expect(fake.sent()).toMatchObject([
      { kind: "create", receiveIdType: "open_id", receiveId: "ou_user_1", chatId: "oc_p2p_ou_user_1" },
      { kind: "create", receiveIdType: "chat_id", receiveId: "oc_team" },
    ]);
    expect(fake.sent()[0]?.uuid).not.toBe(fake.sent()[1]?.uuid);
  });

  it("surfaces a non-zero code as an error quoting Feishu's message, without retrying", async () => {
    const { adapter, fake } = await start();
    fake.failNext({ code: 230002, msg: "The bot can not be outside the group." });
    const error = await adapter.send(dm).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(FeishuApiError);
    expect(error).toMatchObject({ code: "feishu.api_error", platformCode: 230002, isRetryable: false });
    expect(String((error as Error).message)).toContain("The bot can not be outside the group.");
    expect(fake.requests().filter((request) => request.path === "/open-apis/im/v1/messages")).toHaveLength(1);
  });

  it("surfaces an HTTP 400 business error the SDK throws the same way", async () => {
    const { adapter, fake } = await start();
    fake.failNext({ code: 230027, msg: "Lack of necessary permissions.", httpStatus: 400 });
    await expect(adapter.send(dm)).rejects.toMatchObject({
      code: "feishu.api_error",
      platformCode: 230027,
      status: 400,
      message: expect.stringContaining("Lack of necessary permissions."),
    });
  });

  it("waits as long as x-ogw-ratelimit-reset says and then delivers", async () => {
    const { adapter, fake, sleeps } = await start();
    fake.rateLimitNext({ resetSeconds: 3 });
    await adapter.send(dm);
    expect(sleeps).toEqual([3000]);
    expect(fake.sent()).toHaveLength(1);
  });

  it("honours the older HTTP 400 form of the rate limit too", async () => {
    const { adapter, fake, sleeps } = await start();
    fake.rateLimitNext({ resetSeconds: 2, httpStatus: 400 });
    await adapter.send(dm);
    expect(sleeps).toEqual([2000]);
    expect(fake.sent()).toHaveLength(1);
  });

  it("gives up with feishu.rate_limited after maxRetries", async () => {
    const { adapter, fake, sleeps } = await start({ options: { maxRetries: 2 } });
    fake.rateLimitNext({ times: 5, resetSeconds: 1 });
    await expect(adapter.send(dm)).rejects.toMatchObject({ code: "feishu.rate_limited", retryAfterMs: 1000 });
    expect(sleeps).toEqual([1000, 1000]);
    expect(fake.sent()).toEqual([]);
  });

  it("retries a chunk with the same uuid, so a repeat cannot post twice", async () => {
    const { adapter, fake } = await start();
    fake.rateLimitNext();
    await adapter.send(dm);
    const uuids = fake
      .requests()
      .filter((request) => request.path === "/open-apis/im/v1/messages")
      .map((request) => Reflect.get(Object(request.body), "uuid"));
    expect(uuids).toHaveLength(2);
    expect(uuids[0]).toBe(uuids[1]);
  });

  it("reports a platform that cannot be reached as a retryable network error", async () => {
    const { adapter, fake, sleeps } = await start({ options: { maxRetries: 1 } });
    await fake.close();
    await expect(adapter.send(dm)).rejects.toMatchObject({ code: "feishu.network_error", isRetryable: true });
    expect(sleeps).toEqual([1000]);
  });

  it("refuses a session key of another channel or account", async () => {
    const { adapter } = await start();
    await expect(adapter.send({ sessionKey: "discord:default:dm:123", text: "x" })).rejects.toMatchObject({
      code: "feishu.session_key_invalid",
    });
    await expect(adapter.send({ sessionKey: "feishu:other:dm:ou_1", text: "x" })).rejects.toMatchObject({
      code: "feishu.session_key_invalid",
    });
  });

  it("answers in the chat when the question was recalled before the reply", async () => {
    const { adapter, fake } = await start();
    fake.failNext({ code: 230011, msg: "The message is recalled.", httpStatus: 400 });
    await adapter.send({ ...dm, inReplyTo: question });
    expect(fake.sent()).toMatchObject([{ kind: "create", receiveIdType: "open_id", receiveId: "ou_user_1" }]);
    fake.failNext({ code: 230002, msg: "The bot can not be outside the group.", httpStatus: 400 });
    await expect(adapter.send({ ...dm, inReplyTo: question })).rejects.toMatchObject({
      platformCode: 230002,
    });
  });

  it("sends nothing for a blank answer", async () => {
    const { adapter, fake } = await start();
    await adapter.send({ ...dm, text: " \n " });
    expect(fake.sent()).toEqual([]);
  });

  it("keeps the typing indicator best-effort when the reaction fails", async () => {
    const { adapter, fake } = await start();
    fake.failNext({ code: 231001, msg: "reaction type is invalid." });
    const stop = await adapter.startTyping(question);
    await expect(stop()).resolves.toBeUndefined();
    expect(fake.reactions()).toEqual([]);
  });
});

describe("FeishuAdapter start and configuration", () => {
  it("fails to start with feishu.auth_failed when the app secret is wrong", async () => {
    const started = startHarness({ settings: { appSecret: "wrong" } });
    await expect(started).rejects.toMatchObject({ code: "feishu.auth_failed", platformCode: 10014 });
  });

  it("refuses webhook mode without an encrypt key or verification token", () => {
    const settings = feishuChannel.settings.parse({
      appId: "cli_0123456789abcdef",
      appSecret: "s",
      mode: "webhook",
    });
    if (!feishuChannel.enabled(settings)) throw new Error("expected the settings to enable Feishu");
    let caught: unknown;
    try {
      createFeishuAdapter(settings);
    } catch (error) {
      caught = error;
    }
    expect(isAlmanacError(caught) ? `${caught.code}: ${caught.message}` : String(caught)).toMatch(
      /^feishu\.config_invalid: .*webhook mode needs encryptKey/,
    );
    expect(() => createFeishuAdapter({ ...settings, encryptKey: "k" })).not.toThrow();
  });
});
