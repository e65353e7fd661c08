import { silentLogger } from "@almanac/core";
import { z } from "zod";
import { DingTalkError } from "./errors.js";
import type { DingTalkAdapterConfig, DingTalkClock, ResolvedDingTalkConfig } from "./types.js";

/** Where DingTalk's Stream gateway and OpenAPI live. */
export const DINGTALK_API_BASE_URL = "https://api.dingtalk.com";

const baseUrl = z
  .url({ protocol: /^https?$/ })
  .transform((url) => url.replace(/\/+$/, ""))
  .default(DINGTALK_API_BASE_URL);

const configSchema = z
  .object({
    clientId: z.string().trim().min(1, "is required (the app's Client ID / AppKey)"),
    clientSecret: z.string().trim().min(1, "is required (the app's Client Secret / AppSecret)"),
    robotCode: z.string().trim().min(1).optional(),
    account: z.string().trim().min(1).default("default"),
    gatewayUrl: baseUrl,
    apiBaseUrl: baseUrl,
    throttleRetryDelayMs: z.number().int().min(0).default(1_000),
    throttleRetries: z.number().int().min(0).max(10).default(3),
    requestTimeoutMs: z.number().int().min(100).default(15_000),
    keepAliveIntervalMs: z.number().int().min(10).default(10_000),
    keepAliveTimeoutMs: z.number().int().min(20).default(30_000),
  })
  .refine((config) => config.keepAliveTimeoutMs > config.keepAliveIntervalMs, {
    path: ["keepAliveTimeoutMs"],
    message: "must be longer than keepAliveIntervalMs (a pong needs time to come back)",
  });

/** The system clock. */
export const systemClock: DingTalkClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (ms <= 0 || signal?.aborted === true) {
        resolve();
        return;
      }
      const done = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener("abort", done, { once: true });
    }),
};

/**
 * Validates the adapter config and applies defaults.
 * @throws DingTalkError `dingtalk.config_invalid` naming the offending key (never its value).
 */
export function resolveDingTalkConfig(config: DingTalkAdapterConfig): ResolvedDingTalkConfig {
  const { logger, clock, ...plain } = config;
  const parsed = configSchema.safeParse(plain);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join(".") || "config"} ${issue.message}`,
    );
    throw new DingTalkError(
      "dingtalk.config_invalid",
      `Invalid DingTalk adapter config: ${problems.join("; ")}.`,
    );
  }
  const { robotCode, ...rest } = parsed.data;
  return {
    ...rest,
    robotCode: robotCode ?? rest.clientId,
    logger: logger ?? silentLogger,
    clock: clock ?? systemClock,
  };
}
