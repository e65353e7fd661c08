import { lastUserText, script } from "@almanac/testkit";
import { type FakeDiscord, startFakeDiscord, waitUntil } from "@almanac/testkit/discord";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

let discord: FakeDiscord;
let running: TestServer | undefined;

beforeEach(async () => {
  discord = await startFakeDiscord();
  const { ids, user } = discord.world;
  running = await startTestServer({
    env: {
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: user.id,
      ALMANAC_DISCORD_GROUPS: ids.channel,
    },
  });
  running.llm.setFallback((request) => script.text(`echo: ${lastUserText(request)}`));
  await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000 });
});
afterEach(async () => {
  await running?.close();
  running = undefined;
  await discord.close();
});

describe("Discord through the real server", () => {
  it("answers a DM, reports the channel ready, and gives a disallowed sender no answer", async () => {
    const channels = (await (await running!.api("/api/channels")).json()) as {
      channels: Array<{ channel: string; state: string }>;
    };
    expect(channels.channels).toContainEqual(expect.objectContaining({ channel: "discord", state: "ready" }));
    discord.dispatchMessage({
      where: "dm",
      content: "hello bot",
      author: { id: "1600000000000000099", username: "mallory" },
    });
    discord.dispatchMessage({ where: "dm", content: "hello bot" });
    await waitUntil(() => discord.sent().length === 1, { timeoutMs: 10_000 });
    expect(discord.sent()[0]?.content).toBe("echo: hello bot");
    expect(discord.sent()[0]?.channelId).toBe(discord.world.ids.dmChannel);
    expect(running!.llm.chatRequests()).toHaveLength(1);
  });

  it("ignores a group message without a mention and answers one with a mention in the same channel", async () => {
    discord.dispatchMessage({ where: "channel", content: "just chatting" });
    const asked = discord.dispatchMessage({ where: "channel", content: " what is up?", mention: "user" });
    await waitUntil(() => discord.sent().length === 1, { timeoutMs: 10_000 });
    const reply = discord.sent()[0];
    expect(reply?.content).toBe("echo: what is up?");
    expect(reply?.channelId).toBe(discord.world.ids.channel);
    expect(reply?.messageReference?.message_id).toBe(asked.d.id);
    expect(running!.llm.chatRequests()).toHaveLength(1);
  });

  it("answers a redelivered event once", async () => {
    const event = discord.dispatchMessage({ where: "dm", content: "only once" });
    discord.redeliver(event);
    await waitUntil(() => discord.sent().length >= 1, { timeoutMs: 10_000 });
    discord.dispatchMessage({ where: "dm", content: "second" });
    await waitUntil(() => discord.sent().length >= 2, { timeoutMs: 10_000 });
    expect(discord.sent().map((message) => message.content)).toEqual(["echo: only once", "echo: second"]);
  });

  it("splits a 5,000-character answer with a code block within the limit, code block intact", async () => {
    const code = Array.from({ length: 60 }, (_, index) => `const line${index} = "value number ${index}";`);
    const prose = "This paragraph explains the change in detail. ".repeat(60);
    running!.llm.setFallback(() =>
      script.text(`${prose}\n\n\`\`\`ts\n${code.join("\n")}\n\`\`\`\n\n${prose}`),
    );
    discord.dispatchMessage({ where: "dm", content: "long answer please" });
    await waitUntil(() => discord.sent().length >= 3, { timeoutMs: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const chunks = discord.sent().map((message) => message.content);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(2000);
      expect((chunk.match(/```/g) ?? []).length % 2).toBe(0);
    }
    const codeLines = chunks
      .flatMap((chunk) => chunk.split("\n"))
      .filter((line) => line.startsWith("const line"));
    expect(codeLines).toEqual(code);
  });

  it("keeps answering after the platform drops the connection", async () => {
    discord.dropConnection(1006);
    await waitUntil(
      () => discord.activeConnections() === 1 && discord.identifies() + discord.resumes() >= 2,
      { timeoutMs: 15_000 },
    );
    discord.dispatchMessage({ where: "dm", content: "after the drop" });
    await waitUntil(() => discord.sent().length === 1, { timeoutMs: 10_000 });
    expect(discord.sent()[0]?.content).toBe("echo: after the drop");
  }, 30_000);
});
