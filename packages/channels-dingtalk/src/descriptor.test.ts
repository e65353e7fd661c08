import { describe, expect, it } from "vitest";
import { dingtalkChannel } from "./descriptor.js";

describe("dingtalkChannel", () => {
  it("is off without client id and secret, with DingTalk's API as the one default base URL", () => {
    const settings = dingtalkChannel.settings.parse({});
    expect(dingtalkChannel.enabled(settings)).toBe(false);
    expect(dingtalkChannel.check(settings)).toBeUndefined();
    expect(settings).toMatchObject({
      gatewayUrl: "https://api.dingtalk.com",
      apiBaseUrl: "https://api.dingtalk.com",
    });
    expect(settings.robotCode).toBeUndefined();
    expect(dingtalkChannel.settings.parse({ clientId: " ding123 " }).clientId).toBe("ding123");
  });

  it("streams into an AI card only with a template id, and uploads files through the older API's base URL", () => {
    const settings = dingtalkChannel.settings.parse({ cardTemplateId: "  tpl-1.schema " });
    expect(settings).toMatchObject({
      cardTemplateId: "tpl-1.schema",
      oapiBaseUrl: "https://oapi.dingtalk.com",
    });
    expect(dingtalkChannel.settings.parse({}).cardTemplateId).toBeUndefined();
    // Static capabilities cannot depend on the template: the adapter's startReplyStream says whether it streams.
    expect(dingtalkChannel.capabilities).toEqual({ streamingEdits: false, buttons: false, uploads: true });
  });

  it("names the bad keys without echoing the secret", () => {
    const parsed = dingtalkChannel.settings.safeParse({
      clientId: "",
      clientSecret: "s3cr3t-value",
      gatewayUrl: "not a url",
    });
    expect(parsed.error?.issues.map((issue) => issue.path.join("."))).toEqual(["clientId", "gatewayUrl"]);
    expect(JSON.stringify(parsed.error?.issues)).not.toContain("s3cr3t-value");
  });

  it("fails the doctor's check when only one credential is set, naming the one that is", () => {
    expect(dingtalkChannel.check(dingtalkChannel.settings.parse({ clientId: "ding123" }))).toEqual({
      status: "fail",
      message: "only ALMANAC_DINGTALK_CLIENT_ID is set; the channel stays off",
      hint: "set both ALMANAC_DINGTALK_CLIENT_ID and ALMANAC_DINGTALK_CLIENT_SECRET, or neither",
    });
    const settings = dingtalkChannel.settings.parse({ clientId: "ding123", clientSecret: "s3cr3t-value" });
    expect(dingtalkChannel.enabled(settings)).toBe(true);
    expect(JSON.stringify(dingtalkChannel.check(settings))).not.toContain("s3cr3t-value");
  });
});
