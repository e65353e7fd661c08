import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../test/adapter-harness.js";
import { feishuChannel } from "./descriptor.js";
import { createFeishuAdapter } from "./feishu-adapter.js";
import { pieceUuid } from "./outbound-sender.js";

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

/** The harness's settings again, for a second adapter on the same fake (the server after a restart). */
function settingsFor(fake: Harness["fake"]) {
  const settings = feishuChannel.settings.parse({
    appId: fake.appId,
    appSecret: fake.appSecret,
    domain: fake.baseUrl,
    mode: "webhook",
    verificationToken: "vt",
  });
  if (!feishuChannel.enabled(settings)) throw new Error("expected the settings to enable Feishu");
  return settings;
}

const start = async () => {
  harness = await startHarness({ settings: { mode: "webhook", verificationToken: "vt" } });
  return harness;
};

/** Three paragraphs of 18,000 characters: three posts, as two would not fit Feishu's 30 KB. */
const LONG_TEXT = ["a", "b", "c"].map((letter) => `${letter} `.repeat(9000).trim()).join("\n\n");
const KEY = "TABCDE-1796520000000";

const postText = (content: unknown): string => JSON.stringify(content).match(/"text":"([abc])/)?.[1] ?? "?";

describe("pieceUuid", () => {
  it("is the key and the piece's index when that fits Feishu's 50 characters", () => {
    expect(pieceUuid(KEY, 0)).toBe("TABCDE-1796520000000-0");
    expect(pieceUuid(KEY, 12)).toBe("TABCDE-1796520000000-12");
  });

  it("is a stable 50-character hash for a longer key or one with other characters", () => {
    const long = "k".repeat(49);
    expect(pieceUuid(long, 0)).toMatch(/^[0-9a-f]{50}$/);
    expect(pieceUuid(long, 0)).toBe(pieceUuid(long, 0));
    expect(pieceUuid(long, 1)).not.toBe(pieceUuid(long, 0));
    expect(pieceUuid("task:1 2", 0)).toMatch(/^[0-9a-f]{50}$/);
  });
});

describe("FeishuAdapter sends with an idempotency key", () => {
  it("says its sends are idempotent", async () => {
    const { adapter } = await start();
    expect(adapter.idempotentSends).toBe(true);
  });

  it("posts each piece once however often the same key is sent, and again for another key", async () => {
    const { adapter, fake } = await start();
    const message = { sessionKey: "feishu:default:dm:ou_user_1", text: LONG_TEXT, idempotencyKey: KEY };
    await adapter.send(message);
    await adapter.send(message);
    expect(fake.sent().map((sent) => sent.uuid)).toEqual([`${KEY}-0`, `${KEY}-1`, `${KEY}-2`]);
    expect(fake.sent().map((sent) => postText(sent.content))).toEqual(["a", "b", "c"]);
    await adapter.send({ ...message, idempotencyKey: "TABCDE-1796520060000" });
    expect(fake.sent()).toHaveLength(6);
  });

  it("after a send cut off while Feishu created its first piece, a new adapter sending it again completes it once", async () => {
    const { adapter, fake } = await start();
    const message = { sessionKey: "feishu:default:dm:ou_user_1", text: LONG_TEXT, idempotencyKey: KEY };
    const held = fake.holdNextMessageResponse();
    const cut = adapter.send(message).catch(() => {});
    await held.message;
    // The server dies here: Feishu has piece one, the adapter never heard so.
    await adapter.stop();
    held.release();
    await cut;

    const restarted = createFeishuAdapter(settingsFor(fake));
    await restarted.start(() => {});
    try {
      await restarted.send(message);
    } finally {
      await restarted.stop();
    }
    expect(fake.sent().map((sent) => postText(sent.content))).toEqual(["a", "b", "c"]);
  });
});
