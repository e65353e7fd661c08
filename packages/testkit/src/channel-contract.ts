// The channel-adapter contract suite: the same behaviour tests run against every ChannelAdapter (Discord,
// Feishu, DingTalk), each over its fake platform, like the memory backends' contract suite. Imported by a
// `*.contract.test.ts` in each channel package; only test code imports this module (it uses vitest).
import {
  type ChannelAdapter,
  type ChannelStatus,
  hasTypingIndicator,
  type InboundMessage,
  parseSessionKey,
} from "@almanac/core";
import { afterEach, describe, expect, it } from "vitest";

/** One message the fake platform accepted from the bot. */
export interface ContractSentMessage {
  /** The text as the platform stores it (after the adapter's Markdown conversion). */
  readonly text: string;
  /** Its size as the platform counts it against {@link ChannelContractDriver.messageLimit}. */
  readonly size: number;
}

/** An adapter wired to its fake platform, driven the same way for every channel. */
export interface ChannelContractDriver {
  /** The adapter, started and connected to its fake platform. */
  readonly adapter: ChannelAdapter;
  /** A person writes `text` to the bot in a direct chat; resolves with what the adapter delivered. */
  directMessage(text: string): Promise<InboundMessage>;
  /** A person writes `text` in a group, @-mentioning the bot or not; resolves with what the adapter delivered. */
  groupMessage(text: string, options: { readonly mentionsBot: boolean }): Promise<InboundMessage>;
  /** Messages the fake platform accepted from the bot, in order. */
  sent(): readonly ContractSentMessage[];
  /** The most one message may hold, in the unit of {@link ContractSentMessage.size}. */
  readonly messageLimit: number;
  /** Typing indicators the fake platform shows in the conversation of `message`; absent when the platform has none. */
  readonly typingShown?: (message: InboundMessage) => number;
  /** The platform cuts the bot's connection (the adapter must reconnect on its own). */
  dropConnection(): void;
  /** Stops the adapter and the fake platform. */
  close(): Promise<void>;
}

/** Polls `check` until it returns true; fails naming `what` after `timeoutMs`. */
async function eventually(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Every state `adapter.status()` passes through, sampled every 2 ms until `stop()`. */
function recordStates(adapter: ChannelAdapter): { states: ChannelStatus["state"][]; stop(): void } {
  const states: ChannelStatus["state"][] = [adapter.status().state];
  const sample = () => {
    const { state } = adapter.status();
    if (states.at(-1) !== state) states.push(state);
  };
  const timer = setInterval(sample, 2);
  return {
    states,
    stop: () => {
      clearInterval(timer);
      sample();
    },
  };
}

/** Plain words `w00000 w00001 …` in paragraphs of 40, at least `minLength` characters. */
function numberedWords(minLength: number): { text: string; words: string[] } {
  const words: string[] = [];
  const paragraphs: string[] = [];
  let length = 0;
  while (length < minLength) {
    const paragraph = Array.from({ length: 40 }, (_, index) => {
      const word = `w${String(words.length + index).padStart(5, "0")}`;
      return word;
    });
    words.push(...paragraph);
    const text = paragraph.join(" ");
    paragraphs.push(text);
    length += text.length + 2;
  }
  return { text: paragraphs.join("\n\n"), words };
}

/**
 * Registers the contract tests for one channel adapter. `createDriver` starts a fresh fake platform and an
 * adapter connected to it, once per test.
 */
export function describeChannelAdapterContract(
  name: string,
  createDriver: () => Promise<ChannelContractDriver>,
): void {
  describe(`${name} (channel adapter contract)`, () => {
    let driver: ChannelContractDriver | undefined;

    afterEach(async () => {
      await driver?.close();
      driver = undefined;
    });

    async function started(): Promise<ChannelContractDriver> {
      driver = await createDriver();
      return driver;
    }

    it("normalizes a direct message to the common model: session key, conversation, sender, text, raw", async () => {
      const current = await started();
      const before = Date.now();
      const message = await current.directMessage("hello from the contract");
      const key = parseSessionKey(message.sessionKey);
      expect(message.channel).toBe(current.adapter.name);
      expect(key).toMatchObject({ channel: current.adapter.name, account: message.account, kind: "dm" });
      expect(message.conversation.kind).toBe("dm");
      expect(message.mentioned).toBe(true);
      expect(message.text).toBe("hello from the contract");
      expect(message.id).toEqual(expect.any(String));
      expect(message.id.length).toBeGreaterThan(0);
      expect(message.sender.id.length).toBeGreaterThan(0);
      expect(message.receivedAt).toBeGreaterThanOrEqual(before - 1000);
      expect(message.raw).toBeDefined();
      expect(current.adapter.status()).toMatchObject({ channel: current.adapter.name, state: "ready" });
      expect(current.adapter.status().lastEventAt).toEqual(expect.any(Number));
    });

    it("marks a group message as mentioning the bot only when it does, with the mention stripped", async () => {
      const current = await started();
      const quiet = await current.groupMessage("just chatting", { mentionsBot: false });
      expect(quiet).toMatchObject({
        mentioned: false,
        text: "just chatting",
        conversation: { kind: "group" },
      });
      expect(parseSessionKey(quiet.sessionKey).kind).toBe("group");
      const addressed = await current.groupMessage("what is the plan?", { mentionsBot: true });
      expect(addressed).toMatchObject({
        mentioned: true,
        text: "what is the plan?",
        conversation: { kind: "group" },
      });
      expect(addressed.sessionKey).toBe(quiet.sessionKey);
    });

    it("splits an over-long reply into messages within the platform's limit, every word kept in order", async () => {
      const current = await started();
      const question = await current.directMessage("tell me everything");
      const { text, words } = numberedWords(current.messageLimit * 2.5);
      await current.adapter.send({ sessionKey: question.sessionKey, text, inReplyTo: question });
      const sent = current.sent();
      expect(sent.length).toBeGreaterThan(1);
      for (const message of sent) expect(message.size).toBeLessThanOrEqual(current.messageLimit);
      const received = sent.flatMap((message) => message.text.match(/w\d{5}/g) ?? []);
      expect(received).toEqual(words);
    });

    it("shows a typing indicator where the platform has one, and only then offers it", async () => {
      const current = await started();
      expect(hasTypingIndicator(current.adapter)).toBe(current.typingShown !== undefined);
      if (!hasTypingIndicator(current.adapter) || current.typingShown === undefined) return;
      const { typingShown } = current;
      const message = await current.directMessage("think hard");
      const stop = await current.adapter.startTyping(message);
      await eventually(() => typingShown(message) > 0, "a typing indicator");
      await stop();
    });

    it("reports the lost connection while it reconnects, then ready again, and keeps delivering", async () => {
      const current = await started();
      await current.directMessage("before the drop");
      const recorder = recordStates(current.adapter);
      try {
        current.dropConnection();
        await eventually(
          () => recorder.states.includes("connecting") && current.adapter.status().state === "ready",
          "connecting, then ready",
        );
      } finally {
        recorder.stop();
      }
      expect(recorder.states).toEqual(["ready", "connecting", "ready"]);
      const after = await current.directMessage("after the drop");
      expect(after.text).toBe("after the drop");
    });
  });
}
