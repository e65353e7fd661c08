import { describeChannelAdapterContract } from "@almanac/testkit/channel-contract";
import { waitUntil } from "@almanac/testkit/feishu";
import { startHarness } from "../test/adapter-harness.js";

/** Feishu's limit for one post request body, in bytes (what the fake enforces by default). */
const POST_BODY_LIMIT = 30 * 1024;

/** Every `text` inside a sent post's content, in order. */
function textsOf(content: unknown): string[] {
  if (Array.isArray(content)) return content.flatMap(textsOf);
  if (typeof content !== "object" || content === null) return [];
  return Object.entries(content).flatMap(([key, value]) =>
    key === "text" && typeof value === "string" ? [value] : textsOf(value),
  );
}

describeChannelAdapterContract("FeishuAdapter", async () => {
  const harness = await startHarness();
  const { fake, adapter } = harness;
  await fake.waitForConnection();
  const deliver = async (send: () => void) => {
    // The fake can push only once the client has greeted it on the (re)opened long connection.
    await waitUntil(() => fake.isConnected(), { what: "the long connection" });
    const count = harness.inbound.length + 1;
    send();
    return (await harness.waitForInbound(count))[count - 1]!;
  };
  return {
    adapter,
    directMessage: (text) => deliver(() => fake.sendEvent({ chatType: "p2p", text })),
    groupMessage: (text, { mentionsBot }) =>
      deliver(() => fake.sendEvent({ chatType: "group", text, mentionBot: mentionsBot })),
    sent: () => fake.sent().map((post) => ({ text: textsOf(post.content).join("\n"), size: post.bodyBytes })),
    messageLimit: POST_BODY_LIMIT,
    typingShown: (message) =>
      fake.reactions().filter((reaction) => reaction.messageId === message.id && !reaction.deleted).length,
    dropConnection: () => fake.dropConnection(),
    close: () => harness.close(),
  };
});
