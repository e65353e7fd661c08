import { describeChannelAdapterContract } from "@almanac/testkit/channel-contract";
import { DEFAULT_MARKDOWN_LIMIT } from "@almanac/testkit/dingtalk";
import { beforeEach, vi } from "vitest";
import { startHarness } from "../test/adapter-harness.js";

beforeEach(() => {
  // dingtalk-stream prints "connect success" / "Disconnecting." with console.info itself.
  vi.spyOn(console, "info").mockImplementation(() => {});
  return () => vi.restoreAllMocks();
});

describeChannelAdapterContract("DingTalkAdapter", async () => {
  const harness = await startHarness();
  const { fake, adapter } = harness;
  const next = () => harness.nextInbound(harness.inbound.length + 1);
  return {
    adapter,
    directMessage: (text) => {
      const delivered = next();
      fake.sendRobotMessage({ conversation: "single", text });
      return delivered;
    },
    groupMessage: (text, { mentionsBot }) => {
      const delivered = next();
      fake.sendRobotMessage({ conversation: "group", text, isInAtList: mentionsBot });
      return delivered;
    },
    sent: () => fake.sent().map((message) => ({ text: message.text, size: message.text.length })),
    messageLimit: DEFAULT_MARKDOWN_LIMIT,
    dropConnection: () => fake.dropConnection(),
    close: () => harness.close(),
  };
});
