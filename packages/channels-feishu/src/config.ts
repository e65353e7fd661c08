import { type Logger, silentLogger, UserError } from "@almanac/core";
import { webhookUnverifiable } from "./descriptor.js";
import type { FeishuAdapterOptions, FeishuAdapterSettings, FeishuMode } from "./types.js";

/** The adapter's validated settings with its run-time options, defaults applied. */
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
  readonly schedule: (ms: number, callback: () => void) => void;
}

/**
 * Combines the settings (validated by the configuration schema) with the run-time options' defaults.
 * @throws UserError `feishu.config_invalid` for webhook mode without a way to verify requests.
 */
export function resolveFeishuConfig(
  settings: FeishuAdapterSettings,
  options: FeishuAdapterOptions,
): ResolvedFeishuConfig {
  if (webhookUnverifiable(settings)) {
    throw new UserError(
      "feishu.config_invalid",
      "Invalid Feishu adapter config: webhook mode needs encryptKey (recommended) or verificationToken to authenticate requests.",
    );
  }
  return {
    appId: settings.appId,
    appSecret: settings.appSecret,
    mode: settings.mode,
    encryptKey: settings.encryptKey,
    verificationToken: settings.verificationToken,
    domain: settings.domain.replace(/\/+$/, ""),
    account: options.account ?? "default",
    logger: options.logger ?? silentLogger,
    maxRetries: options.maxRetries ?? 3,
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    typingEmoji: options.typingEmoji ?? "Typing",
    sleep: options.sleep ?? abortableSleep,
    now: options.now ?? Date.now,
    schedule:
      options.schedule ??
      ((ms, callback) => {
        setTimeout(callback, ms);
      }),
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
