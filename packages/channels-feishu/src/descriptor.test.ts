import { describe, expect, it } from "vitest";
import { feishuChannel } from "./descriptor.js";

const appId = "cli_a1b2c3d4e5f60718";

describe("feishuChannel", () => {
  it("is off without app id and secret, with Feishu's open platform as the one default domain", () => {
    const settings = feishuChannel.settings.parse({});
    expect(feishuChannel.enabled(settings)).toBe(false);
    expect(feishuChannel.check(settings)).toBeUndefined();
    expect(settings).toMatchObject({ domain: "https://open.feishu.cn", mode: "websocket" });
    expect(feishuChannel.enabled(feishuChannel.settings.parse({ appId }))).toBe(false);
  });

  it("names the bad keys: an app id of another shape and a domain that is not http(s)", () => {
    const parsed = feishuChannel.settings.safeParse({ appId: "my-app", appSecret: "s", domain: "ftp://x" });
    expect(parsed.error?.issues.map((issue) => [issue.path.join("."), issue.message])).toEqual([
      [
        "appId",
        "expected a Feishu/Lark app id: cli_ followed by 16 hex digits (Developer Console → Credentials & Basic Info)",
      ],
      ["domain", "expected an http(s) URL"],
    ]);
  });

  it("fails the doctor's check for half the credentials or an unverifiable webhook, never printing a secret", () => {
    const secret = "app-secret-value";
    expect(feishuChannel.check(feishuChannel.settings.parse({ appSecret: secret }))).toMatchObject({
      status: "fail",
      message: "only ALMANAC_FEISHU_APP_SECRET is set; the channel stays off",
    });
    const webhook = feishuChannel.check(
      feishuChannel.settings.parse({ appId, appSecret: secret, mode: "webhook" }),
    );
    expect(webhook).toMatchObject({ status: "fail" });
    expect(webhook?.message).toContain("ALMANAC_FEISHU_ENCRYPT_KEY");
    const ok = feishuChannel.check(
      feishuChannel.settings.parse({ appId, appSecret: secret, mode: "webhook", encryptKey: "k-secret" }),
    );
    expect(ok).toEqual({ status: "ok", message: `enabled (app ${appId}, webhook mode)` });
    expect(JSON.stringify([webhook, ok])).not.toMatch(/app-secret-value|k-secret/);
  });
});
