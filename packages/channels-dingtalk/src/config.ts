import { silentLogger } from "@almanac/core";
import { DingTalkError } from "./errors.js";
import type {
  DingTalkAdapterOptions,
  DingTalkAdapterSettings,
  DingTalkClock,
  ResolvedDingTalkConfig,
} from "./types.js";

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
 * Combines the settings (validated by the configuration schema) with the run-time options' defaults.
 * @throws DingTalkError `dingtalk.config_invalid` when the keep-alive timeout is not longer than its interval.
 */
export function resolveDingTalkConfig(
  settings: DingTalkAdapterSettings,
  options: DingTalkAdapterOptions,
): ResolvedDingTalkConfig {
  const keepAliveIntervalMs = options.keepAliveIntervalMs ?? 10_000;
  const keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 30_000;
  if (keepAliveTimeoutMs <= keepAliveIntervalMs) {
    throw new DingTalkError(
      "dingtalk.config_invalid",
      "Invalid DingTalk adapter config: keepAliveTimeoutMs must be longer than keepAliveIntervalMs (a pong needs time to come back).",
    );
  }
  return {
    clientId: settings.clientId,
    clientSecret: settings.clientSecret,
    robotCode: settings.robotCode ?? settings.clientId,
    gatewayUrl: settings.gatewayUrl.replace(/\/+$/, ""),
    apiBaseUrl: settings.apiBaseUrl.replace(/\/+$/, ""),
    oapiBaseUrl: settings.oapiBaseUrl.replace(/\/+$/, ""),
    cardTemplateId: settings.cardTemplateId,
    account: options.account ?? "default",
    logger: options.logger ?? silentLogger,
    throttleRetryDelayMs: options.throttleRetryDelayMs ?? 1_000,
    throttleRetries: options.throttleRetries ?? 3,
    requestTimeoutMs: options.requestTimeoutMs ?? 15_000,
    keepAliveIntervalMs,
    keepAliveTimeoutMs,
    clock: options.clock ?? systemClock,
  };
}
