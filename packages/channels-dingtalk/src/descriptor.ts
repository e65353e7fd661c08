// The DingTalk channel as the server sees it: its configuration block, when it is on, its doctor check and its
// factory. Imported by the configuration loader, so it must not load dingtalk-stream (the adapter is imported
// only when the channel is enabled).
import { type ChannelDescriptor, channelAccessSettings, httpUrl, setting } from "@almanac/core";
import { z } from "zod";

/**
 * The `channels.dingtalk` block of the configuration, with its environment variables. Credentials are trimmed (a
 * space copied along from the developer console would otherwise fail authentication).
 */
const dingtalkSettings = z
  .strictObject({
    clientId: setting(z.string().trim().min(1).optional(), {
      env: "ALMANAC_DINGTALK_CLIENT_ID",
      description:
        "DingTalk app key (client id); with the secret, enables the DingTalk channel (Stream mode).",
      example: "dingxxxxxxxx",
    }),
    clientSecret: setting(z.string().trim().min(1).optional(), {
      env: "ALMANAC_DINGTALK_CLIENT_SECRET",
      description: "DingTalk app secret (client secret).",
      secret: true,
      example: "secret",
    }),
    robotCode: setting(z.string().trim().min(1).optional(), {
      env: "ALMANAC_DINGTALK_ROBOT_CODE",
      description: "Robot code for OpenAPI replies (defaults to the client id).",
      example: "dingxxxxxxxx",
    }),
    gatewayUrl: setting(httpUrl.default("https://api.dingtalk.com"), {
      env: "ALMANAC_DINGTALK_GATEWAY_URL",
      description: "Stream gateway base URL (set only for testing).",
    }),
    apiBaseUrl: setting(httpUrl.default("https://api.dingtalk.com"), {
      env: "ALMANAC_DINGTALK_API_BASE_URL",
      description: "Robot OpenAPI base URL (set only for testing).",
    }),
    oapiBaseUrl: setting(httpUrl.default("https://oapi.dingtalk.com"), {
      env: "ALMANAC_DINGTALK_OAPI_BASE_URL",
      description:
        "Base URL of DingTalk's older API, used to upload the files the assistant sends (set only for testing).",
    }),
    cardTemplateId: setting(z.string().trim().min(1).optional(), {
      env: "ALMANAC_DINGTALK_CARD_TEMPLATE_ID",
      description:
        "Id of an AI card template (DingTalk developer console → Card Platform → create a template of the AI card kind, with a Markdown variable named `content`). When set, replies are streamed into that card as they are written; unset, each reply is sent whole.",
      example: "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.schema",
    }),
    ...channelAccessSettings("ALMANAC_DINGTALK", "DingTalk"),
  })
  .prefault({});

/** The validated `channels.dingtalk` block. */
export type DingTalkSettings = z.output<typeof dingtalkSettings>;

/** The settings of an enabled DingTalk channel: client id and secret are set. */
export type EnabledDingTalkSettings = DingTalkSettings & {
  readonly clientId: string;
  readonly clientSecret: string;
};

/** DingTalk: an internal app's robot in Stream mode, enabled by client id and secret. */
export const dingtalkChannel: ChannelDescriptor<
  "dingtalk",
  typeof dingtalkSettings,
  EnabledDingTalkSettings
> = {
  name: "dingtalk",
  label: "DingTalk",
  enabledBy: "Setting the client id and secret enables the channel (Stream mode: no public URL needed).",
  settings: dingtalkSettings,
  enabled: (settings): settings is EnabledDingTalkSettings =>
    settings.clientId !== undefined && settings.clientSecret !== undefined,
  async createAdapter(settings, { logger }) {
    const { createDingTalkAdapter } = await import("./dingtalk-adapter.js");
    return createDingTalkAdapter(settings, { logger: logger.child({ channel: "dingtalk" }) });
  },
  check({ clientId, clientSecret }) {
    if (clientId === undefined && clientSecret === undefined) return undefined;
    if (clientId === undefined || clientSecret === undefined) {
      return {
        status: "fail",
        message: `only ${clientId === undefined ? "ALMANAC_DINGTALK_CLIENT_SECRET" : "ALMANAC_DINGTALK_CLIENT_ID"} is set; the channel stays off`,
        hint: "set both ALMANAC_DINGTALK_CLIENT_ID and ALMANAC_DINGTALK_CLIENT_SECRET, or neither",
      };
    }
    return { status: "ok", message: "enabled (client id and secret set, Stream mode)" };
  },
  // Capabilities are static while streaming depends on ALMANAC_DINGTALK_CARD_TEMPLATE_ID: `streamingEdits` stays
  // false, and the adapter has `startReplyStream` only when a card template is configured (what the server checks).
  capabilities: { streamingEdits: false, buttons: false, uploads: true },
};
