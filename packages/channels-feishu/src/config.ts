import { type Logger, silentLogger, UserError } from "@almanac/core";
import { z } from "zod";
import type { FeishuAdapterConfig, FeishuMode } from "./types.js";

/** Feishu's open platform; Lark (international) users set `https://open.larksuite.com`. */
export const DEFAULT_FEISHU_DOMAIN = "https://open.feishu.cn";

/** {@link FeishuAdapterConfig} with defaults applied and values checked. */
export interface ResolvedFeishuConfig {
  readonly appId: string;
  readonly appSecret: string;
  readonly mode: FeishuMode;
  readonly encryptKey: string | undefined;
  readonly verificationToken: string | undefined;
  readonly domain: string;
  readonly account: string;
  readonly logger: Logger;
  readonly maxRetries: number;
  readonly connectTimeoutMs: number;
  readonly typingEmoji: string;
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  readonly now: () => number;
}

// The SDK's WSClient.start() logs and returns without connecting for any other app id.
const APP_ID_PATTERN = /^cli_[0-9a-fA-F]{16}$/;

const schema = z
  .object({
    appId: z.string().min(1, "is required"),
    appSecret: z.string().min(1, "is required"),
    mode: z.enum(["websocket", "webhook"]).default("websocket"),
    encryptKey: z.string().min(1, "must not be empty when set").optional(),
    verificationToken: z.string().min(1, "must not be empty when set").optional(),
    domain: z
      .url({ protocol: /^https?$/, error: "must be an http(s) URL such as https://open.feishu.cn" })
      .default(DEFAULT_FEISHU_DOMAIN),
    account: z.string().min(1, "must not be empty").default("default"),
    maxRetries: z.number().int().min(0).max(10).default(3),
    connectTimeoutMs: z.number().int().positive().default(30_000),
    typingEmoji: z.string().min(1).default("Typing"),
  })
  .superRefine((config, context) => {
    if (config.mode === "websocket" && !APP_ID_PATTERN.test(config.appId)) {
      context.addIssue({
        code: "custom",
        path: ["appId"],
        message:
          'must look like "cli_" followed by 16 hex digits (the App ID shown in the developer console)',
      });
    }
    if (
      config.mode === "webhook" &&
      config.encryptKey === undefined &&
      config.verificationToken === undefined
    ) {
      context.addIssue({
        code: "custom",
        path: ["encryptKey"],
        message: "webhook mode needs encryptKey (recommended) or verificationToken to authenticate requests",
      });
    }
  });

/**
 * Applies defaults and checks the configuration.
 * @throws UserError `feishu.config_invalid` naming each bad key.
 */
export function resolveFeishuConfig(config: FeishuAdapterConfig): ResolvedFeishuConfig {
  const parsed = schema.safeParse({
    appId: config.appId,
    appSecret: config.appSecret,
    mode: config.mode,
    encryptKey: config.encryptKey,
    verificationToken: config.verificationToken,
    domain: config.domain,
    account: config.account,
    maxRetries: config.maxRetries,
    connectTimeoutMs: config.connectTimeoutMs,
    typingEmoji: config.typingEmoji,
  });
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "config"} ${issue.message}`,
    );
    throw new UserError("feishu.config_invalid", `Invalid Feishu adapter config: ${problems.join("; ")}.`);
  }
  return {
    ...parsed.data,
    encryptKey: parsed.data.encryptKey,
    verificationToken: parsed.data.verificationToken,
    domain: parsed.data.domain.replace(/\/+$/, ""),
    logger: config.logger ?? silentLogger,
    sleep: config.sleep ?? abortableSleep,
    now: config.now ?? Date.now,
  };
}

/** Resolves after `ms`, or at once when the signal aborts. */
function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}
