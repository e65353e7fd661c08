import { fileURLToPath } from "node:url";
import { type RecordedChatRequest, script } from "@almanac/testkit";
import {
  type FakeDiscord,
  type FakeDiscordUser,
  type FakeSentMessage,
  startFakeDiscord,
  waitUntil,
} from "@almanac/testkit/discord";
import { afterEach, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

/** The reference MCP server from npm, started by Almanac over stdio. */
const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.close();
});

interface Approval {
  readonly id: string;
  readonly state: string;
  readonly tool: string;
  readonly decidedBy?: string;
}

const stranger: FakeDiscordUser = { id: "1600000000000000099", username: "mallory" };

/**
 * The real server with the "everything" MCP server (its tools offered in shared chats too, so a stranger's DM
 * can ask for one) and the fake Discord: the world's user is the owner (ALLOW_FROM), DMs and channels are open.
 */
async function startWithDiscord(): Promise<{ server: TestServer; discord: FakeDiscord }> {
  const discord = await startFakeDiscord();
  running.push(discord);
  const server = await startTestServer({
    env: {
      ALMANAC_MCP_SERVERS: JSON.stringify({
        everything: { command: process.execPath, args: [EVERYTHING_SERVER], sharedChats: true },
      }),
      ALMANAC_DISCORD_TOKEN: discord.token(),
      ALMANAC_DISCORD_API_BASE_URL: discord.apiUrl,
      ALMANAC_DISCORD_ALLOW_FROM: discord.world.user.id,
      ALMANAC_DISCORD_DM_POLICY: "open",
      ALMANAC_DISCORD_GROUP_POLICY: "open",
    },
  });
  running.push(server);
  await waitUntil(
    async () => {
      const body = (await (await server.api("/api/tools")).json()) as {
        mcpServers: Array<{ state: string }>;
      };
      return body.mcpServers[0]?.state === "ready";
    },
    { timeoutMs: 20_000, what: "the MCP server" },
  );
  await waitUntil(() => discord.activeConnections() === 1, { timeoutMs: 10_000, what: "the gateway" });
  return { server, discord };
}

/** The model: calls get-sum with `a` and `b` when asked, then answers with what the tool said. */
function scriptSum(server: TestServer, a: number, b: number): void {
  server.llm.setFallback((request) => {
    const last = request.messages.at(-1);
    if (last?.role === "tool") return script.text(`Tool said: ${String(last.content)}`);
    return script.toolCalls([{ name: "mcp__everything__get-sum", arguments: { a, b } }]);
  });
}

/** The approval question, once the bot posted it, and the id it asks about. */
async function question(discord: FakeDiscord): Promise<{ sent: FakeSentMessage; id: string }> {
  const sent = await waitUntil(
    () => discord.sent().find((message) => message.content.includes("Approval needed")),
    {
      timeoutMs: 10_000,
      what: "the approval question",
    },
  );
  const id = /approve ([A-Z2-9]{4})/.exec(sent.content)?.[1];
  if (id === undefined) throw new Error(`no approval id in ${sent.content}`);
  return { sent, id };
}

/** The bot's first message whose text contains `text`. */
function posted(discord: FakeDiscord, text: string): Promise<FakeSentMessage> {
  return waitUntil(() => discord.sent().find((message) => message.content.includes(text)), {
    timeoutMs: 10_000,
    what: `a message saying "${text}"`,
  });
}

async function approvals(server: TestServer): Promise<{ pending: Approval[]; approvals: Approval[] }> {
  return (await (await server.api("/api/approvals")).json()) as {
    pending: Approval[];
    approvals: Approval[];
  };
}

/** The server's log lines, parsed (pino writes one JSON object a line). */
function logEntries(server: TestServer): Record<string, unknown>[] {
  return server.logs
    .flatMap((chunk) => chunk.split("\n"))
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The tool result the model was sent last, from the recorded requests. */
function lastToolResult(requests: readonly RecordedChatRequest[]): string {
  for (const request of [...requests].reverse()) {
    const tool = request.messages.findLast((message) => message.role === "tool");
    if (tool !== undefined) return String(tool.content);
  }
  return "";
}

describe("approval buttons on Discord", () => {
  it("asks with Approve/Deny buttons in the owner's DM; the owner's press runs the call", async () => {
    const { server, discord } = await startWithDiscord();
    scriptSum(server, 20, 22);
    discord.dispatchMessage({ where: "dm", content: "Please add 20 and 22." });
    const { sent, id } = await question(discord);
    expect(sent.channelId).toBe(discord.world.ids.dmChannel);
    expect(sent.components).toEqual([
      {
        type: 1,
        components: [
          { type: 2, style: 1, label: "Approve", custom_id: `almanac:approve ${id}` },
          { type: 2, style: 4, label: "Deny", custom_id: `almanac:deny ${id}` },
        ],
      },
    ]);

    const press = discord.pressButton({ message: sent.message, label: "Approve" });
    const answer = await posted(discord, `Approved ${id}`);
    // The answer replies to the question the button was on; the buttons went with the press.
    expect(answer.messageReference?.message_id).toBe(sent.id);
    expect(discord.interactionCallbacks()).toMatchObject([
      { interactionId: press.d.id, type: 7, data: { components: [] } },
    ]);
    expect(discord.message(sent.id)?.components).toEqual([]);
    await posted(discord, "The sum of 20 and 22 is 42");
    expect((await approvals(server)).approvals[0]).toMatchObject({
      id,
      state: "approved",
      decidedBy: `discord:${discord.world.user.id}`,
    });
  }, 60_000);

  it("in a channel, turns a stranger's press away at the gate like their typing; the owner's Deny tells the model", async () => {
    const { server, discord } = await startWithDiscord();
    const { ids, user } = discord.world;
    scriptSum(server, 2, 3);
    discord.dispatchMessage({ where: "channel", content: "Please add 2 and 3.", mention: "user" });
    const { sent, id } = await question(discord);
    expect(sent.channelId).toBe(ids.channel);

    // Someone else in the channel sees the buttons and presses Approve: it arrives as their message in the
    // channel's session, and the gate refuses it as it would refuse them typing `approve <id>`.
    const strangerPress = discord.pressButton({ message: sent.message, label: "Approve", author: stranger });
    const refused = await waitUntil(
      () =>
        logEntries(server).find(
          (entry) => entry.msg === "message refused by the channel gate" && entry.senderId === stranger.id,
        ),
      { timeoutMs: 10_000, what: "the gate to refuse the stranger's press" },
    );
    expect(refused).toMatchObject({
      sessionKey: `discord:default:group:${ids.channel}`,
      messageId: strangerPress.d.id,
    });
    expect((await approvals(server)).pending.map((approval) => approval.id)).toEqual([id]);
    // The stranger's press leaves the buttons for the owner.
    expect(discord.interactionCallbacks()).toMatchObject([{ interactionId: strangerPress.d.id, type: 6 }]);

    discord.pressButton({ message: sent.message, label: "Deny", author: user });
    const denied = await posted(discord, `Denied ${id}`);
    expect(denied.channelId).toBe(ids.channel);
    await posted(discord, "Tool said: The owner denied this call of mcp__everything__get-sum");
    expect(lastToolResult(server.llm.chatRequests())).toContain(
      "The owner denied this call of mcp__everything__get-sum",
    );
    expect((await approvals(server)).approvals[0]).toMatchObject({
      id,
      state: "denied",
      decidedBy: `discord:${user.id}`,
    });
    expect(discord.sent().some((message) => message.content.includes("The sum of"))).toBe(false);
  }, 60_000);

  it("refuses a stranger's press in their own DM: only the owner can answer approvals", async () => {
    const { server, discord } = await startWithDiscord();
    scriptSum(server, 4, 5);
    discord.dispatchMessage({ where: "dm", content: "Please add 4 and 5.", author: stranger });
    const { sent, id } = await question(discord);
    expect(sent.channelId).not.toBe(discord.world.ids.dmChannel);

    discord.pressButton({ message: sent.message, label: "Approve", author: stranger });
    const refusal = await posted(discord, "Only the owner can answer approvals");
    expect(refusal.channelId).toBe(sent.channelId);
    expect((await approvals(server)).pending.map((approval) => approval.id)).toEqual([id]);

    // The owner decides elsewhere (here over the API); the stranger's turn then ends.
    const decided = await server.api(`/api/approvals/${id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
    expect(decided.status).toBe(200);
    await posted(discord, "Tool said: The owner denied this call");
    expect(discord.sent().some((message) => message.content.includes("The sum of"))).toBe(false);
  }, 60_000);
});
