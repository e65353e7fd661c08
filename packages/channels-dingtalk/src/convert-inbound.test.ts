import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { flattenRichText, toInboundMessage } from "./convert-inbound.js";
import { parseRobotPayload, type RobotPayload } from "./robot-payload.js";

function fixture(name: string): RobotPayload {
  const parsed = parseRobotPayload(readFileSync(new URL(`./__fixtures__/${name}`, import.meta.url), "utf8"));
  if (!parsed.ok) throw new Error(`fixture ${name}: ${parsed.reason}`);
  return parsed.payload;
}

const context = { account: "work", streamMessageId: "frame-1", receivedAt: 1_700_000_000_000 };

describe("toInboundMessage", () => {
  it("normalizes a group text message that @-mentions the robot", () => {
    const message = toInboundMessage(fixture("robot-text-group.json"), context);
    expect(message).toMatchObject({
      sessionKey: "dingtalk:work:group:cidGroupFixture0000000001==",
      channel: "dingtalk",
      id: "msgFixtureGroupText000000==",
      account: "work",
      conversation: { kind: "group", id: "cidGroupFixture0000000001==", name: "Project Room" },
      sender: { id: "0123456789012345", name: "Zhang San" },
      mentioned: true,
      text: "what is on the agenda?",
      receivedAt: context.receivedAt,
      raw: {
        streamMessageId: "frame-1",
        payload: { sessionWebhook: expect.stringContaining("sendBySession") },
      },
    });
  });

  it("keys a one-on-one chat by the sender's staff id and flattens rich text with picture references", () => {
    const message = toInboundMessage(fixture("robot-richtext-single.json"), context);
    expect(message.sessionKey).toBe("dingtalk:work:dm:manager4321");
    expect(message.conversation).toEqual({ kind: "dm", id: "cidSingleFixture000000001==" });
    expect(message.mentioned).toBe(true);
    expect(message.text).toBe("Look at this chart\nand tell me the trend.");
    expect(message.attachments).toEqual([{ kind: "image", id: "fixtureDownloadCode1" }]);
  });

  it("reports mentioned false when DingTalk says the robot is not in the at-list", () => {
    const payload = { ...fixture("robot-text-group.json"), isInAtList: false };
    expect(toInboundMessage(payload, context).mentioned).toBe(false);
  });

  it("falls back to the encrypted sender id when there is no staff id", () => {
    const { senderStaffId: _dropped, ...payload } = fixture("robot-richtext-single.json");
    const message = toInboundMessage(payload, context);
    expect(message.sender.id).toBe("$:LWCP_v1:$fixtureSender111111111111111");
    expect(message.sessionKey).toBe("dingtalk:work:dm:$%3ALWCP_v1%3A$fixtureSender111111111111111");
  });

  it("keeps the quoted message id of a reply and the recognition of a voice message", () => {
    const base = fixture("robot-text-group.json");
    const reply = {
      ...base,
      text: { content: " yes", isReplyMsg: true, repliedMsg: { msgId: "msgQuoted==" } },
    };
    expect(toInboundMessage(reply, context)).toMatchObject({ text: "yes", replyTo: "msgQuoted==" });
    const voice = {
      ...base,
      msgtype: "audio",
      content: { downloadCode: "audio-1", recognition: " hello there" },
    };
    expect(toInboundMessage(voice, context)).toMatchObject({
      text: "hello there",
      attachments: [{ kind: "audio", id: "audio-1" }],
    });
  });
});

describe("flattenRichText", () => {
  it("joins text pieces in order and breaks the line at a picture", () => {
    const flattened = flattenRichText([
      { text: "a " },
      { type: "text", text: "b" },
      { type: "picture", downloadCode: "p1" },
      { type: "picture", pictureDownloadCode: "p2" },
      { text: "c" },
    ]);
    expect(flattened).toEqual({
      text: "a b\nc",
      attachments: [
        { kind: "image", id: "p1" },
        { kind: "image", id: "p2" },
      ],
    });
  });
});

describe("parseRobotPayload", () => {
  it("explains why a payload is unusable instead of throwing", () => {
    expect(parseRobotPayload("not json")).toEqual({ ok: false, reason: "data is not JSON" });
    const missing = parseRobotPayload(JSON.stringify({ msgId: "m", conversationType: "3" }));
    expect(missing.ok).toBe(false);
    expect(missing.ok ? "" : missing.reason).toContain("conversationType");
  });
});
