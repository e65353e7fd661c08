import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChannelDescriptor, channelAccessSettings } from "@almanac/core";
import { lastUserText, script } from "@almanac/testkit";
import { startFakeDingTalk } from "@almanac/testkit/dingtalk";
import { startFakeDiscord } from "@almanac/testkit/discord";
import { startFakeFeishu } from "@almanac/testkit/feishu";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { CHANNELS, type ChannelName } from "../src/channels/channel-list.js";
import { waitFor } from "./server-process.js";
import { startTestServer, type TestServer } from "./test-server.js";

/** A channel's block of the configuration file, as its descriptor's schema takes it. */
type SettingsInput<Name extends ChannelName> = z.input<
  Extract<(typeof CHANNELS)[number], { readonly name: Name }>["settings"]
>;

/** A test kit fake platform started for one channel, driven the same way for every channel. */
interface ChannelFake<Name extends ChannelName> {
  /** `channels.<name>`: credentials of the fake, URLs pointing at it, the fake's user allowlisted. */
  readonly settings: SettingsInput<Name>;
  /** True once the server's adapter is connected to the fake. */
  connected(): boolean;
  /** The allowlisted user writes `text` to the bot in a direct message. */
  directMessage(text: string): void;
  /** What the bot posted, in order (as text the reply can be found in). */
  sent(): readonly string[];
  close(): Promise<void>;
}

/**
 * The test kit's fake of every channel in the list, by channel name. A channel added to the list without a fake
 * here does not compile, and the test below says so too.
 */
const FAKES: { readonly [Name in ChannelName]: () => Promise<ChannelFake<Name>> } = {
  discord: async () => {
    const fake = await startFakeDiscord();
    return {
      settings: { token: fake.token(), apiBaseUrl: fake.apiUrl, allowFrom: [fake.world.user.id] },
      connected: () => fake.activeConnections() === 1,
      directMessage: (text) => fake.dispatchMessage({ where: "dm", content: text }),
      sent: () => fake.sent().map((message) => message.content),
      close: () => fake.close(),
    };
  },
  feishu: async () => {
    const fake = await startFakeFeishu();
    return {
      settings: {
        appId: fake.appId,
        appSecret: fake.appSecret,
        domain: fake.baseUrl,
        allowFrom: ["ou_user_1"], // the fake's default sender
      },
      connected: () => fake.isConnected(),
      directMessage: (text) => fake.sendEvent({ chatType: "p2p", text }),
      // What the chat shows now: a streamed reply is a card edited until it holds the whole text.
      sent: () => fake.shown().map((message) => JSON.stringify(message.content)),
      close: () => fake.close(),
    };
  },
  dingtalk: async () => {
    const fake = await startFakeDingTalk();
    return {
      settings: {
        clientId: fake.clientId,
        clientSecret: fake.clientSecret,
        robotCode: fake.robotCode,
        gatewayUrl: fake.url,
        apiBaseUrl: fake.url,
        allowFrom: ["staff-001"], // the fake's default sender
      },
      connected: () => fake.isConnected(),
      directMessage: (text) => fake.sendRobotMessage({ conversation: "single", text }),
      sent: () => fake.sent().map((message) => message.text),
      close: () => fake.close(),
    };
  },
};

const cleanups: (() => Promise<void>)[] = [];

beforeEach(() => {
  // dingtalk-stream prints a few lines with console.info itself (docs/channels/dingtalk.md).
  vi.spyOn(console, "info").mockImplementation(() => {});
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  vi.restoreAllMocks();
});

/** Starts the channel's fake and a server whose configuration file enables only that channel. */
async function serverWith<Name extends ChannelName>(
  name: Name,
): Promise<{ fake: ChannelFake<Name>; server: TestServer }> {
  const fake: ChannelFake<Name> = await FAKES[name]();
  cleanups.push(() => fake.close());
  const home = await mkdtemp(join(tmpdir(), `almanac-${name}-`));
  cleanups.push(() => rm(home, { recursive: true, force: true }));
  // The server reads almanac.json from its working directory, which is its home here.
  await writeFile(join(home, "almanac.json"), JSON.stringify({ channels: { [name]: fake.settings } }));
  const server = await startTestServer({ home });
  cleanups.push(() => server.close());
  server.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
  return { fake, server };
}

describe("the channel list", () => {
  it("has a test kit fake for every channel", () => {
    expect(Object.keys(FAKES).sort()).toEqual(CHANNELS.map((channel) => channel.name).sort());
  });

  it("does not compile a channel whose settings leave out the memory-scope keys", () => {
    const { trustedGroups, ...withoutTrustedGroups } = channelAccessSettings("ALMANAC_EXAMPLE", "Example");
    const incomplete = z.strictObject({ token: z.string().optional(), ...withoutTrustedGroups });
    const complete = incomplete.extend({ trustedGroups });
    // @ts-expect-error: without trustedGroups the schema's output is not ChannelAccessSettings
    const refused: ChannelDescriptor<"example", typeof incomplete>["settings"] = incomplete;
    const accepted: ChannelDescriptor<"example", typeof complete>["settings"] = complete;
    expect(accepted.parse({}).trustedGroups).toEqual([]);
    expect(refused.parse({})).not.toHaveProperty("trustedGroups");
  });

  for (const channel of CHANNELS) {
    it(`${channel.label}: a direct message goes through the real server to the model and back`, async () => {
      const { fake, server } = await serverWith(channel.name);
      await waitFor(fake.connected, 15_000, `the ${channel.name} adapter connected to its fake`);
      fake.directMessage("hello from the channel list");
      await waitFor(
        () => fake.sent().some((text) => text.includes("echo: hello from the channel list")),
        15_000,
        `the ${channel.name} reply`,
      );
      expect(server.llm.chatRequests().map((request) => lastUserText(request))).toEqual([
        "hello from the channel list",
      ]);
    });
  }
});
