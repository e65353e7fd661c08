import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type Harness, type HarnessOptions, startHarness } from "../test/adapter-harness.js";
import { DINGTALK_MARKDOWN_LIMIT } from "./convert-outbound.js";
import { isDingTalkError } from "./errors.js";
import type { DingTalkClock } from "./types.js";

let harness: Harness | undefined;

beforeEach(() => {
  vi.spyOn(console, "info").mockImplementation(() => {});
});

afterEach(async () => {
  await harness?.close();
  harness = undefined;
  vi.restoreAllMocks();
});

async function start(options: HarnessOptions = {}): Promise<Harness> {
  harness = await startHarness(options);
  return harness;
}

/** System time, but sleeps are recorded and return at once. */
function recordingClock(): DingTalkClock & { readonly sleeps: number[] } {
  const sleeps: number[] = [];
  return { sleeps, now: () => Date.now(), sleep: async (ms) => void sleeps.push(ms) };
}

const fences = (text: string) => (text.match(/^```/gm) ?? []).length;

describe("DingTalk adapter: sending", () => {
  it("splits a long answer within the limit and keeps the code block whole, as quoted lines", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.sendRobotMessage({ conversation: "group", text: "explain" });
    const inbound = await nextInbound(1);
    const prose = (label: string) =>
      Array.from(
        { length: 12 },
        (_, index) => `${label} paragraph ${index}: ${"lorem ipsum ".repeat(15)}`,
      ).join("\n\n");
    const lines = Array.from({ length: 40 }, (_, index) => `print("line ${index}")`);
    const code = `\`\`\`python\n${lines.join("\n")}\n\`\`\``;
    // DingTalk does not render fenced code: it arrives as quoted lines (see convert-outbound-markdown.ts).
    const quoted = ["> *python*  ", ...lines.map((line) => `> ${line}  `)].join("\n");
    const answer = `# Answer\n\n${prose("First")}\n\n${code}\n\n${prose("Second")}`;
    expect(answer.length).toBeGreaterThan(5_000);

    await adapter.send({ sessionKey: inbound.sessionKey, text: answer, inReplyTo: inbound });
    const sent = fake.sent();
    expect(sent.length).toBeGreaterThan(1);
    for (const message of sent) {
      expect(message.route).toBe("sessionWebhook");
      expect(message.text.length).toBeLessThanOrEqual(DINGTALK_MARKDOWN_LIMIT);
      expect(fences(message.text)).toBe(0);
      expect(message.title?.length).toBeGreaterThan(0);
    }
    expect(sent.filter((message) => message.text.includes(quoted))).toHaveLength(1);
    expect(sent[0]?.title).toBe("Answer");
    const joined = sent.map((message) => message.text).join("\n\n");
    expect(joined.indexOf("First paragraph 11")).toBeLessThan(joined.indexOf("Second paragraph 0"));
    expect(fake.rejections()).toEqual([]);
  });

  it("uses the robot OpenAPI with a cached access token once the sessionWebhook expired", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.sendRobotMessage({ conversation: "single", text: "remind me", webhookExpired: true });
    fake.sendRobotMessage({ conversation: "group", text: "later", webhookExpired: true });
    const dm = await nextInbound(1);
    const group = await nextInbound(2);
    await adapter.send({ sessionKey: dm.sessionKey, text: "Reminder: **stand-up**", inReplyTo: dm });
    await adapter.send({ sessionKey: group.sessionKey, text: "Done.", inReplyTo: group });
    expect(fake.sent()).toEqual([
      expect.objectContaining({
        route: "openapi",
        conversationType: "1",
        userIds: ["staff-001"],
        title: "Reminder: stand-up",
      }),
      expect.objectContaining({
        route: "openapi",
        conversationType: "2",
        conversationId: group.conversation.id,
      }),
    ]);
    expect(fake.tokensIssued()).toBe(1);
    expect(fake.rejections()).toEqual([]);
  });

  it("falls back to the OpenAPI when DingTalk says the sessionWebhook is gone before its expiry", async () => {
    const { fake, adapter, nextInbound } = await start();
    fake.sendRobotMessage({ conversation: "single", text: "hi", webhookRevoked: true });
    const inbound = await nextInbound(1);
    await adapter.send({ sessionKey: inbound.sessionKey, text: "still here", inReplyTo: inbound });
    expect(fake.rejections().map((rejection) => rejection.code)).toEqual(["300001"]);
    expect(fake.sent()).toEqual([expect.objectContaining({ route: "openapi", userIds: ["staff-001"] })]);
  });

  it("sends proactive messages by session key through the OpenAPI", async () => {
    const { fake, adapter } = await start();
    await adapter.send({ sessionKey: "dingtalk:default:group:cid-team==", text: "Good morning" });
    await adapter.send({ sessionKey: "dingtalk:default:dm:staff-042", text: "Your report is ready" });
    expect(fake.sent().map((sent) => [sent.route, sent.conversationId ?? sent.userIds])).toEqual([
      ["openapi", "cid-team=="],
      ["openapi", ["staff-042"]],
    ]);
    const unreachable = adapter.send({ sessionKey: "dingtalk:default:dm:$%3ALWCP_v1%3A$abc", text: "hi" });
    await expect(unreachable).rejects.toSatisfy((error) => isDingTalkError(error, "dingtalk.target_invalid"));
  });

  it("fetches a new access token when DingTalk calls the cached one invalid", async () => {
    const { fake, adapter } = await start();
    await adapter.send({ sessionKey: "dingtalk:default:group:cid-a==", text: "one" });
    fake.expireAccessTokens();
    await adapter.send({ sessionKey: "dingtalk:default:group:cid-a==", text: "two" });
    expect(fake.tokensIssued()).toBe(2);
    expect(fake.sent().map((sent) => sent.text)).toEqual(["one", "two"]);
  });

  it("waits and retries when DingTalk throttles the sessionWebhook or the OpenAPI", async () => {
    const clock = recordingClock();
    const { fake, adapter, nextInbound } = await start({ adapter: { clock, throttleRetryDelayMs: 700 } });
    fake.sendRobotMessage({ conversation: "single", text: "hi" });
    const inbound = await nextInbound(1);
    fake.rateLimitNext({ route: "sessionWebhook" });
    await adapter.send({ sessionKey: inbound.sessionKey, text: "first", inReplyTo: inbound });
    expect(clock.sleeps).toEqual([700]);
    fake.rateLimitNext({ route: "openapi", times: 2 });
    await adapter.send({ sessionKey: "dingtalk:default:group:cid-b==", text: "second" });
    expect(clock.sleeps).toEqual([700, 700, 1_400]);
    expect(fake.rejections().map((rejection) => rejection.code)).toEqual([
      "130101",
      "Forbidden.AccessDenied.QpsLimitForApi",
      "Forbidden.AccessDenied.QpsLimitForApi",
    ]);
    expect(fake.sent().map((sent) => [sent.route, sent.text])).toEqual([
      ["sessionWebhook", "first"],
      ["openapi", "second"],
    ]);
  });

  it("surfaces throttling after the retry budget and DingTalk's words for a refused message", async () => {
    const clock = recordingClock();
    const { fake, adapter } = await start({ adapter: { clock, throttleRetries: 1 } });
    fake.rateLimitNext({ route: "openapi", times: 2 });
    const throttled = adapter.send({ sessionKey: "dingtalk:default:group:cid-c==", text: "x" });
    await expect(throttled).rejects.toSatisfy(
      (error) => isDingTalkError(error, "dingtalk.rate_limited") && error.status === 403,
    );
    await harness?.close();
    harness = await startHarness({ settings: { robotCode: "not-our-robot" } });
    const refused = harness.adapter.send({ sessionKey: "dingtalk:default:group:cid-c==", text: "x" });
    await expect(refused).rejects.toSatisfy(
      (error) =>
        isDingTalkError(error, "dingtalk.send_failed") &&
        error.platformCode === "InvalidParameter" &&
        error.message.includes("not-our-robot"),
    );
  });
});
