import { lastUserText, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord } from "@almanac/testkit/discord";
import { type FakeFeishu, startFakeFeishu } from "@almanac/testkit/feishu";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createProcessHarness, type ServerProcess, spawnServer, waitFor } from "./server-process.js";
import { TEST_TOKEN } from "./test-server.js";

// A reminder's reply is on its way to the platform when the server is SIGKILLed: the platform has created the
// message, the server never heard so (the fake holds its answer), and the journal says `delivering`. After the
// restart the scheduler sends it again with the same key, the platform recognizes it, and the chat has it once.

const harness = createProcessHarness("almanac-tasks-delivery-crash-");
const servers: ServerProcess[] = [];
const fakes: Array<{ close(): Promise<void> }> = [];
beforeEach(() => harness.setUp());
afterEach(async () => {
  for (const server of servers.splice(0)) server.child.kill("SIGKILL");
  await harness.tearDown();
  for (const fake of fakes.splice(0)) await fake.close();
});

const REMINDER = "Stretch now.";

interface Firing {
  readonly id: string;
  readonly state: string;
  readonly sessionKey: string;
}

/** What the scenario needs of a fake platform. */
interface Platform {
  readonly env: Record<string, string>;
  /** The owner's direct chat. */
  readonly sessionKey: string;
  /** Resolves once the server's adapter is connected. */
  connected(): Promise<void>;
  /** Holds back the answer to the next message the bot creates; resolves with its text once it is created. */
  holdNext(): { readonly created: Promise<string>; release(): void };
  /** Messages in the owner's direct chat saying the reminder. */
  reminders(): number;
  /** Requests that asked the platform to create the reminder, and the idempotency values they carried. */
  attempts(): readonly unknown[];
}

async function api(url: string, path: string, init: RequestInit = {}): Promise<unknown> {
  const response = await fetch(`${url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
  });
  return response.json();
}

async function firingsOf(url: string): Promise<Firing[]> {
  return ((await api(url, "/api/tasks/firings")) as { firings: Firing[] }).firings;
}

async function start(platform: Platform): Promise<ServerProcess> {
  const server = await spawnServer({ ...harness.env(), ...platform.env });
  servers.push(server);
  await platform.connected();
  return server;
}

/** Fails with `what` unless `promise` settles within `timeoutMs`. */
function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_resolve, reject) =>
      setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), timeoutMs).unref(),
    ),
  ]);
}

async function killedDuringTheSend(platform: Platform): Promise<void> {
  harness.llm.setFallback((request) =>
    script.text(lastUserText(request).startsWith("[Scheduled task") ? REMINDER : "ok"),
  );
  const first = await start(platform);
  const held = platform.holdNext();
  await api(first.url, "/api/tasks", {
    method: "POST",
    body: JSON.stringify({
      sessionKey: platform.sessionKey,
      instruction: "Remind them to stretch.",
      in: "1s",
    }),
  });
  expect(await within(held.created, 15_000, "the reminder to reach the platform")).toContain(REMINDER);
  const [firing] = await firingsOf(first.url);
  expect(firing).toMatchObject({ state: "delivering", sessionKey: platform.sessionKey });
  first.child.kill("SIGKILL");
  await first.exited;
  held.release();
  expect(platform.reminders()).toBe(1);

  const second = await start(platform);
  await waitFor(
    async () => (await firingsOf(second.url))[0]?.state === "delivered",
    20_000,
    "the firing to be delivered after the restart",
  );
  expect(await firingsOf(second.url)).toMatchObject([{ id: firing?.id, state: "delivered" }]);
  // Sent twice with the same key, shown once.
  const attempts = platform.attempts();
  expect(attempts).toHaveLength(2);
  expect(attempts[1]).toEqual(attempts[0]);
  expect(platform.reminders()).toBe(1);
  expect(harness.llm.rejections()).toEqual([]);
}

function discordPlatform(discord: FakeDiscord): Platform {
  const { user, dmChannel } = { user: discord.world.user, dmChannel: discord.world.ids.dmChannel };
  const reminderPosts = () =>
    discord
      .requests()
      .filter(
        (request) =>
          request.method === "POST" &&
          request.path === `/channels/${dmChannel}/messages` &&
          Reflect.get(Object(request.body), "content") === REMINDER,
      );
  return {
    env: {
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: user.id,
    },
    sessionKey: `discord:default:dm:${user.id}`,
    connected: () => waitFor(() => discord.activeConnections() === 1, 15_000, "the Discord gateway"),
    holdNext() {
      const held = discord.holdNextMessageResponse();
      return { created: held.message.then((message) => message.content), release: held.release };
    },
    reminders: () =>
      discord.sent().filter((message) => message.channelId === dmChannel && message.content === REMINDER)
        .length,
    attempts: () =>
      reminderPosts().map((request) => ({
        nonce: Reflect.get(Object(request.body), "nonce"),
        enforce: Reflect.get(Object(request.body), "enforce_nonce"),
      })),
  };
}

function feishuPlatform(feishu: FakeFeishu): Platform {
  const owner = "ou_user_1";
  const saysReminder = (content: unknown) => JSON.stringify(content).includes(REMINDER);
  return {
    env: {
      ALMANAC_FEISHU_APP_ID: feishu.appId,
      ALMANAC_FEISHU_APP_SECRET: feishu.appSecret,
      ALMANAC_FEISHU_DOMAIN: feishu.baseUrl,
      ALMANAC_FEISHU_ALLOW_FROM: owner,
    },
    sessionKey: `feishu:default:dm:${owner}`,
    connected: () => waitFor(() => feishu.isConnected(), 15_000, "the Feishu long connection"),
    holdNext() {
      const held = feishu.holdNextMessageResponse();
      return { created: held.message.then((message) => message.rawContent), release: held.release };
    },
    reminders: () =>
      feishu.sent().filter((message) => message.receiveId === owner && saysReminder(message.content)).length,
    attempts: () =>
      feishu
        .requests()
        .filter(
          (request) =>
            request.path === "/open-apis/im/v1/messages" &&
            saysReminder(Reflect.get(Object(request.body), "content")),
        )
        .map((request) => Reflect.get(Object(request.body), "uuid")),
  };
}

describe("a reminder's reply across a SIGKILL during the send", () => {
  it("Discord: sent again after the restart with the same nonce, the DM has it once and the firing is delivered", async () => {
    const discord = await startFakeDiscord();
    fakes.push(discord);
    await killedDuringTheSend(discordPlatform(discord));
  }, 90_000);

  it("Feishu: sent again after the restart with the same uuid, the chat has it once and the firing is delivered", async () => {
    const feishu = await startFakeFeishu();
    fakes.push(feishu);
    await killedDuringTheSend(feishuPlatform(feishu));
  }, 90_000);
});
