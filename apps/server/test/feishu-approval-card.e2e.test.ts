import { fileURLToPath } from "node:url";
import { script } from "@almanac/testkit";
import { type FakeFeishu, type FakeSentMessage, startFakeFeishu } from "@almanac/testkit/feishu";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "./server-process.js";
import { startTestServer, type TestServer } from "./test-server.js";

/** The reference MCP server from npm, started by Almanac over stdio. */
const EVERYTHING_SERVER = fileURLToPath(
  new URL("../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
);

const OWNER = { openId: "ou_owner0000000000000000000000001" };
const STRANGER = { openId: "ou_stranger00000000000000000000099" };
const ENCRYPT_KEY = "enc-key-123";
const VERIFICATION_TOKEN = "verify-token-123";

interface Approval {
  readonly id: string;
  readonly state: string;
  readonly tool: string;
  readonly decidedBy?: string;
}

const running: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const item of running.splice(0).reverse()) await item.close();
});

/**
 * A server with the "everything" MCP server (its tools offered in shared chats too, so a group and a stranger's DM
 * can ask for `get-sum`) and the Feishu channel pointed at a fake: the owner in ALLOW_FROM, DMs open to anyone,
 * every group open.
 */
async function start(mode: "websocket" | "webhook"): Promise<{ server: TestServer; fake: FakeFeishu }> {
  const fake = await startFakeFeishu();
  running.push(fake);
  const server = await startTestServer({
    env: {
      ALMANAC_MCP_SERVERS: JSON.stringify({
        everything: { command: process.execPath, args: [EVERYTHING_SERVER], sharedChats: true },
      }),
      // Replies sent whole: this file checks the transport and the gate; streamed cards are feishu-attachments.e2e.
      ALMANAC_STREAM_REPLIES: "none",
      ALMANAC_FEISHU_APP_ID: fake.appId,
      ALMANAC_FEISHU_APP_SECRET: fake.appSecret,
      ALMANAC_FEISHU_DOMAIN: fake.baseUrl,
      ALMANAC_FEISHU_MODE: mode,
      ...(mode === "webhook"
        ? { ALMANAC_FEISHU_ENCRYPT_KEY: ENCRYPT_KEY, ALMANAC_FEISHU_VERIFICATION_TOKEN: VERIFICATION_TOKEN }
        : {}),
      ALMANAC_FEISHU_ALLOW_FROM: OWNER.openId,
      ALMANAC_FEISHU_DM_POLICY: "open",
      ALMANAC_FEISHU_GROUP_POLICY: "open",
    },
  });
  running.push(server);
  await waitFor(
    async () => {
      const body = (await (await server.api("/api/tools")).json()) as {
        mcpServers: Array<{ state: string }>;
      };
      return body.mcpServers[0]?.state === "ready";
    },
    20_000,
    "the MCP server",
  );
  // The model adds 20 and 22 with the tool, then says what the tool said.
  server.llm.setFallback((request) => {
    const last = request.messages.at(-1);
    if (last?.role === "tool") return script.text(`Tool said: ${String(last.content)}`);
    return script.toolCalls([{ name: "mcp__everything__get-sum", arguments: { a: 20, b: 22 } }]);
  });
  if (mode === "websocket") await fake.waitForConnection(1, 10_000);
  return { server, fake };
}

/** Everything the bot sent, as text (post Markdown and card JSON alike). */
const textOf = (message: FakeSentMessage | undefined): string => JSON.stringify(message?.content ?? "");

/** The approval card the bot sent into `chatId`, once it is there. */
async function cardIn(fake: FakeFeishu, chatId: string): Promise<{ messageId: string; id: string }> {
  const find = () =>
    fake
      .sent()
      .find(
        (sent) =>
          sent.msgType === "interactive" &&
          sent.chatId === chatId &&
          textOf(sent).includes("Approval needed"),
      );
  await waitFor(() => find() !== undefined, 10_000, `an approval card in ${chatId}`);
  const card = find();
  const id = /approve ([A-Z2-9]{4})/.exec(textOf(card))?.[1] ?? "";
  return { messageId: card?.messageId ?? "", id };
}

/** Waits until the bot sent something containing `text`; returns it. */
async function sentContaining(fake: FakeFeishu, text: string): Promise<FakeSentMessage> {
  await waitFor(
    () => fake.sent().some((sent) => textOf(sent).includes(text)),
    10_000,
    `a message with "${text}"`,
  );
  return fake.sent().find((sent) => textOf(sent).includes(text)) as FakeSentMessage;
}

async function approvals(server: TestServer): Promise<{ pending: Approval[]; approvals: Approval[] }> {
  return (await (await server.api("/api/approvals")).json()) as {
    pending: Approval[];
    approvals: Approval[];
  };
}

describe("approval cards in Feishu, through the real server", () => {
  it("long connection: asks the owner's DM with a card, refuses a stranger's press, runs on the owner's", async () => {
    const { server, fake } = await start("websocket");
    const asked = fake.sendEvent({ chatType: "p2p", text: "Please add 20 and 22.", sender: OWNER });
    const ownerCard = await cardIn(fake, asked.chatId);
    expect(fake.sent().find((sent) => sent.messageId === ownerCard.messageId)).toMatchObject({
      kind: "reply",
      replyTo: asked.messageId,
    });
    expect(textOf(fake.sent().find((sent) => sent.messageId === ownerCard.messageId))).toContain(
      '\\"b\\": 22',
    );
    expect(fake.buttons(ownerCard.messageId)).toMatchObject([
      { label: "Approve", type: "primary", value: { almanac_reply: `approve ${ownerCard.id}` } },
      { label: "Deny", type: "danger", value: { almanac_reply: `deny ${ownerCard.id}` } },
    ]);

    // Someone who may talk to the assistant (DMs are open) but is not the owner asks too, and presses Approve on
    // the card in their own chat: the press is their message, and only the owner can answer approvals.
    const strangerAsked = fake.sendEvent({
      chatType: "p2p",
      text: "Please add 20 and 22 for me.",
      sender: STRANGER,
    });
    const strangerCard = await cardIn(fake, strangerAsked.chatId);
    const strangerPress = await fake.pressButton({
      messageId: strangerCard.messageId,
      label: "Approve",
      operator: STRANGER,
    });
    expect(strangerPress.toast).toEqual({ type: "info", content: `Sent: approve ${strangerCard.id}` });
    const refusal = await sentContaining(fake, "Only the owner can answer approvals");
    expect(refusal).toMatchObject({
      kind: "reply",
      replyTo: strangerCard.messageId,
      chatId: strangerAsked.chatId,
    });
    expect((await approvals(server)).pending.map((approval) => approval.id)).toEqual(
      expect.arrayContaining([ownerCard.id, strangerCard.id]),
    );

    // The owner's press approves: the card loses its buttons, the call runs, the answer arrives.
    const ownerPress = await fake.pressButton({
      messageId: ownerCard.messageId,
      label: "Approve",
      operator: OWNER,
    });
    expect(ownerPress).toMatchObject({
      toast: { type: "info", content: `Sent: approve ${ownerCard.id}` },
      cardReplaced: true,
    });
    expect(fake.buttons(ownerCard.messageId)).toEqual([]);
    const approved = await sentContaining(fake, `Approved ${ownerCard.id}`);
    expect(approved).toMatchObject({ kind: "reply", replyTo: ownerCard.messageId });
    const answer = await sentContaining(fake, "The sum of 20 and 22 is 42");
    expect(answer).toMatchObject({ kind: "reply", replyTo: asked.messageId });

    const listed = await approvals(server);
    expect(listed.approvals.find((approval) => approval.id === ownerCard.id)).toMatchObject({
      state: "approved",
      tool: "mcp__everything__get-sum",
      decidedBy: `feishu:${OWNER.openId}`,
    });
    expect(listed.pending.map((approval) => approval.id)).toEqual([strangerCard.id]);
    // Let the stranger's turn end before the server stops.
    await server.api(`/api/approvals/${strangerCard.id}`, {
      method: "POST",
      body: JSON.stringify({ decision: "deny" }),
    });
  }, 60_000);

  it("webhook: a card in a group keeps its buttons, a stranger's press stops at the gate, the owner's runs", async () => {
    const { server, fake } = await start("webhook");
    const url = `${server.server.url}/channels/feishu/webhook`;
    const delivery = { encryptKey: ENCRYPT_KEY, verificationToken: VERIFICATION_TOKEN };
    const asked = fake.messageEvent({
      chatType: "group",
      chatId: "oc_team",
      text: "Please add 20 and 22.",
      mentionBot: true,
      sender: OWNER,
    });
    expect((await fake.postWebhook(url, asked.envelope, delivery)).status).toBe(200);
    const card = await cardIn(fake, "oc_team");

    // A forged press is refused before anything is read.
    const forged = await fake.pressButtonByWebhook(
      url,
      { messageId: card.messageId, label: "Approve", operator: OWNER },
      { ...delivery, badSignature: true },
    );
    expect(forged.status).toBe(401);

    // In a group with ALLOW_FROM set, the gate drops a stranger's message, a press included: nothing is answered.
    const strangerPress = await fake.pressButtonByWebhook(
      url,
      { messageId: card.messageId, label: "Approve", operator: STRANGER },
      delivery,
    );
    expect(strangerPress).toMatchObject({ status: 200, cardReplaced: false });
    await waitFor(
      () =>
        server.logs.some(
          (line) => line.includes("refused by the channel gate") && line.includes(STRANGER.openId),
        ),
      10_000,
      "the gate to refuse the stranger's press",
    );
    expect(fake.buttons(card.messageId).map((button) => button.label)).toEqual(["Approve", "Deny"]);
    expect((await approvals(server)).pending.map((approval) => approval.id)).toEqual([card.id]);

    const ownerPress = await fake.pressButtonByWebhook(
      url,
      { messageId: card.messageId, label: "Approve", operator: OWNER },
      delivery,
    );
    expect(ownerPress).toMatchObject({ status: 200, toast: { content: `Sent: approve ${card.id}` } });
    const answer = await sentContaining(fake, "The sum of 20 and 22 is 42");
    expect(answer).toMatchObject({ kind: "reply", replyTo: asked.messageId, chatId: "oc_team" });
    const repliesToCard = fake.sent().filter((sent) => sent.replyTo === card.messageId);
    expect(repliesToCard.map(textOf)).toEqual([expect.stringContaining(`Approved ${card.id}`)]);
    expect((await approvals(server)).approvals[0]).toMatchObject({
      id: card.id,
      state: "approved",
      decidedBy: `feishu:${OWNER.openId}`,
    });
  }, 60_000);
});
