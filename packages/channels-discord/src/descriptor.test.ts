import { describe, expect, it } from "vitest";
import { discordChannel } from "./descriptor.js";

const token = "MTIz.abc-def.ghi_jkl";

describe("discordChannel", () => {
  it("is off without a token, with Discord's REST base as the one default", () => {
    const settings = discordChannel.settings.parse(undefined);
    expect(discordChannel.enabled(settings)).toBe(false);
    expect(discordChannel.check(settings)).toBeUndefined();
    expect(settings).toMatchObject({ apiBaseUrl: "https://discord.com/api", dmPolicy: "allowlist" });
  });

  it("refuses a token that is not three dotted parts, saying where to copy it again", () => {
    const parsed = discordChannel.settings.safeParse({ token: "not-a-token" });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ["token"] });
    expect(parsed.error?.issues[0]?.message).toContain("Reset Token");
  });

  it("reports a set token as enabled without printing it", () => {
    const settings = discordChannel.settings.parse({ token });
    expect(discordChannel.enabled(settings)).toBe(true);
    const check = discordChannel.check(settings);
    expect(check).toEqual({ status: "ok", message: "enabled (token set)" });
    expect(JSON.stringify(check)).not.toContain(token);
  });
});
