import { lastUserText, script } from "@almanac/testkit";
import { type FakeDingTalk, startFakeDingTalk, waitUntil } from "@almanac/testkit/dingtalk";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { dingTalkEnv, startTestServer, type TestServer } from "./test-server.js";

let dingtalk: FakeDingTalk;
let running: TestServer | undefined;

beforeEach(async () => {
  // The SDK prints a few lines with console.info itself (documented in docs/channels/dingtalk.md).
  vi.spyOn(console, "info").mockImplementation(() => {});
  dingtalk = await startFakeDingTalk();
  running = await startTestServer({
    env: {
      ...dingTalkEnv(dingtalk),
      ALMANAC_DINGTALK_GROUP_POLICY: "open",
    },
  });
  running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
  await waitUntil(() => dingtalk.isConnected(), { timeoutMs: 10_000 });
});
afterEach(async () => {
  await running?.close();
  running = undefined;
  await dingtalk.close();
  vi.restoreAllMocks();
});

describe("DingTalk through the real server", () => {
  it("answers a single chat via the session webhook and a disallowed sender not at all", async () => {
    dingtalk.sendRobotMessage({
      conversation: "single",
      text: "hello",
      senderStaffId: "staff-999",
      senderNick: "Mallory",
    });
    dingtalk.sendRobotMessage({ conversation: "single", text: "hello robot" });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[0]).toMatchObject({
      route: "sessionWebhook",
      msgtype: "markdown",
      text: "echo: hello robot",
    });
    expect(dingtalk.acks()).toHaveLength(2);
    expect(running!.llm.chatRequests()).toHaveLength(1);
    expect(dingtalk.problems()).toEqual([]);
  });

  it("answers an @-mention in a group in that group, once even when redelivered", async () => {
    const delivery = dingtalk.sendRobotMessage({ conversation: "group", text: "status?" });
    dingtalk.redeliver(delivery.messageId);
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(dingtalk.sent()).toHaveLength(1);
    expect(dingtalk.sent()[0]).toMatchObject({ conversationType: "2", text: "echo: status?" });
  });

  it("ignores a group message that does not mention the robot", async () => {
    dingtalk.sendRobotMessage({ conversation: "group", text: "not for you", isInAtList: false });
    dingtalk.sendRobotMessage({ conversation: "group", text: "for you" });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[0]?.text).toBe("echo: for you");
  });

  it("replies through the OpenAPI when the session webhook has expired, and keeps answering after a drop", async () => {
    dingtalk.sendRobotMessage({ conversation: "single", text: "late", webhookExpired: true });
    await waitUntil(() => dingtalk.sent().length === 1, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[0]).toMatchObject({ route: "openapi", userIds: ["staff-001"] });
    dingtalk.dropConnection();
    await waitUntil(() => dingtalk.connections().length >= 2 && dingtalk.isConnected(), {
      timeoutMs: 15_000,
    });
    dingtalk.sendRobotMessage({ conversation: "single", text: "after the drop" });
    await waitUntil(() => dingtalk.sent().length === 2, { timeoutMs: 10_000 });
    expect(dingtalk.sent()[1]?.text).toBe("echo: after the drop");
  }, 30_000);

  it("splits a long answer with a code block within the markdown limit, code intact as quoted lines", async () => {
    const code = Array.from({ length: 80 }, (_, index) => `print("line ${index} of the generated script")`);
    const prose = "本段解释了这次部署的细节。".repeat(150);
    running!.llm.setFallback(() =>
      script.text(`${prose}\n\n\`\`\`python\n${code.join("\n")}\n\`\`\`\n\n${prose}`),
    );
    dingtalk.sendRobotMessage({ conversation: "single", text: "long please" });
    await waitUntil(() => dingtalk.sent().length >= 2, { timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    const chunks = dingtalk.sent().map((message) => message.text);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(5000);
      expect(chunk).not.toContain("```"); // DingTalk does not render fences: code comes as quoted lines
    }
    const quoted = chunks.flatMap((chunk) => chunk.split("\n")).filter((line) => line.startsWith("> print("));
    expect(quoted.map((line) => line.slice(2).trimEnd())).toEqual(code);
  });
});
