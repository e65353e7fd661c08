import { describeChannelAdapterContract } from "@almanac/testkit/channel-contract";
import { MAX_CONTENT_LENGTH } from "@almanac/testkit/discord";
import { createAdapterHarness } from "../test/adapter-harness.js";

describeChannelAdapterContract("DiscordAdapter", async () => {
  const harness = await createAdapterHarness();
  await harness.start();
  const { fake, adapter } = harness;
  const delivered = (eventId: unknown, what: string) =>
    harness.received((message) => message.id === eventId, what);
  return {
    adapter,
    directMessage: (text) => delivered(fake.dispatchMessage({ where: "dm", content: text }).d.id, text),
    groupMessage: (text, { mentionsBot }) =>
      delivered(
        fake.dispatchMessage({ where: "channel", content: text, ...(mentionsBot ? { mention: "user" } : {}) })
          .d.id,
        text,
      ),
    sent: () => fake.sent().map((message) => ({ text: message.content, size: message.content.length })),
    messageLimit: MAX_CONTENT_LENGTH,
    typingShown: (message) =>
      fake.typing().filter((call) => call.channelId === message.conversation.id).length,
    dropConnection: () => fake.dropConnection(4000),
    close: () => harness.close(),
  };
});
