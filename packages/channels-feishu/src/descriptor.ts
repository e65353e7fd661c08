// The Feishu/Lark channel as the server sees it: its configuration block, when it is on, its doctor check and
// its factory. Imported by the configuration loader, so it must not load the Lark SDK (the adapter is imported
// only when the channel is enabled).
import { type ChannelDescriptor, channelAccessSettings, httpUrl, setting } from "@almanac/core";
import { z } from "zod";

/** A Feishu/Lark app id: `cli_` and 16 hex digits (the SDK's long connection silently does nothing otherwise). */
export const FEISHU_APP_ID_SHAPE = /^cli_[0-9a-f]{16}$/;

/** The `channels.feishu` block of the configuration, with its environment variables. */
const feishuSettings = z
  .strictObject({
    appId: setting(
      z
        .string()
        .regex(FEISHU_APP_ID_SHAPE, {
          error:
            "expected a Feishu/Lark app id: cli_ followed by 16 hex digits (Developer Console → Credentials & Basic Info)",
        })
        .optional(),
      {
        env: "ALMANAC_FEISHU_APP_ID",
        description: "Feishu/Lark app id (cli_…); with the secret, enables the Feishu channel.",
        example: "cli_a1b2c3d4e5f60718",
      },
    ),
    appSecret: setting(z.string().min(1).optional(), {
      env: "ALMANAC_FEISHU_APP_SECRET",
      description: "Feishu/Lark app secret.",
      secret: true,
      example: "secret",
    }),
    mode: setting(z.enum(["websocket", "webhook"]).default("websocket"), {
      env: "ALMANAC_FEISHU_MODE",
      description:
        "Long connection (`websocket`, no public URL needed) or `webhook` (POST /channels/feishu/webhook).",
    }),
    encryptKey: setting(z.string().min(1).optional(), {
      env: "ALMANAC_FEISHU_ENCRYPT_KEY",
      description: "Event encrypt key (webhook mode; also used to verify signatures).",
      secret: true,
      example: "key",
    }),
    verificationToken: setting(z.string().min(1).optional(), {
      env: "ALMANAC_FEISHU_VERIFICATION_TOKEN",
      description: "Event verification token (webhook mode).",
      secret: true,
      example: "token",
    }),
    domain: setting(httpUrl.default("https://open.feishu.cn"), {
      env: "ALMANAC_FEISHU_DOMAIN",
      description:
        "Open platform base URL: https://open.feishu.cn (Feishu) or https://open.larksuite.com (Lark).",
    }),
    ...channelAccessSettings("ALMANAC_FEISHU", "Feishu"),
  })
  .prefault({});

/** The validated `channels.feishu` block. */
export type FeishuSettings = z.output<typeof feishuSettings>;

/** The settings of an enabled Feishu channel: app id and secret are set. */
export type EnabledFeishuSettings = FeishuSettings & { readonly appId: string; readonly appSecret: string };

/**
 * True when webhook mode has neither an Encrypt Key nor a Verification Token, so no request could be told from a
 * forged one. The doctor fails such a set-up and the adapter refuses to be built with it.
 */
export function webhookUnverifiable(
  settings: Pick<FeishuSettings, "mode" | "encryptKey" | "verificationToken">,
): boolean {
  return (
    settings.mode === "webhook" &&
    settings.encryptKey === undefined &&
    settings.verificationToken === undefined
  );
}

/** Feishu / Lark: a custom app's bot over the long connection or webhooks, enabled by app id and secret. */
export const feishuChannel: ChannelDescriptor<"feishu", typeof feishuSettings, EnabledFeishuSettings> = {
  name: "feishu",
  label: "Feishu / Lark",
  enabledBy: "Setting the app id and secret enables the channel.",
  settings: feishuSettings,
  enabled: (settings): settings is EnabledFeishuSettings =>
    settings.appId !== undefined && settings.appSecret !== undefined,
  async createAdapter(settings, { logger }) {
    const { createFeishuAdapter } = await import("./feishu-adapter.js");
    return createFeishuAdapter(settings, { logger: logger.child({ channel: "feishu" }) });
  },
  check(settings) {
    const { appId, appSecret, mode } = settings;
    if (appId === undefined && appSecret === undefined) return undefined;
    if (appId === undefined || appSecret === undefined) {
      return {
        status: "fail",
        message: `only ${appId === undefined ? "ALMANAC_FEISHU_APP_SECRET" : "ALMANAC_FEISHU_APP_ID"} is set; the channel stays off`,
        hint: "set both ALMANAC_FEISHU_APP_ID and ALMANAC_FEISHU_APP_SECRET, or neither",
      };
    }
    if (webhookUnverifiable(settings)) {
      return {
        status: "fail",
        message:
          "webhook mode without ALMANAC_FEISHU_ENCRYPT_KEY or ALMANAC_FEISHU_VERIFICATION_TOKEN: events cannot be verified",
        hint: "set ALMANAC_FEISHU_ENCRYPT_KEY (or the verification token) from Events & Callbacks → Encryption Strategy",
      };
    }
    return { status: "ok", message: `enabled (app ${appId}, ${mode} mode)` };
  },
  capabilities: { streamingEdits: true, buttons: true, uploads: true },
};
