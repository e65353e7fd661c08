import { z } from "zod";
import { DingTalkError } from "./errors.js";
import { describeErrorBody, postJson } from "./http-json.js";
import type { DingTalkClock } from "./types.js";

/** Settings of {@link AccessTokenCache}. */
export interface AccessTokenSettings {
  readonly apiBaseUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly timeoutMs: number;
  readonly clock: DingTalkClock;
}

const tokenSchema = z.object({ accessToken: z.string().min(1), expireIn: z.number().positive() });

/**
 * The app's OpenAPI access token (`POST /v1.0/oauth2/accessToken`), cached until shortly before it expires;
 * concurrent callers share one request.
 */
export class AccessTokenCache {
  private readonly settings: AccessTokenSettings;
  private cached: { readonly token: string; readonly refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(settings: AccessTokenSettings) {
    this.settings = settings;
  }

  /** A valid token, fetched when none is cached or the cached one is about to expire. */
  async get(): Promise<string> {
    if (this.cached !== undefined && this.settings.clock.now() < this.cached.refreshAt)
      return this.cached.token;
    this.pending ??= this.fetch().finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  /** Forgets `token` (DingTalk called it invalid), so the next {@link get} fetches a new one. */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  private async fetch(): Promise<string> {
    const response = await postJson(
      `${this.settings.apiBaseUrl}/v1.0/oauth2/accessToken`,
      { appKey: this.settings.clientId, appSecret: this.settings.clientSecret },
      { timeoutMs: this.settings.timeoutMs, what: "accessToken" },
    );
    if (response.status !== 200) {
      const { code, message } = describeErrorBody(response.body);
      const said = `HTTP ${response.status}${code === undefined ? "" : ` ${code}`}: ${message}`;
      const options = { status: response.status, ...(code === undefined ? {} : { platformCode: code }) };
      if (response.status === 400 || response.status === 401 || response.status === 403) {
        throw new DingTalkError(
          "dingtalk.auth_failed",
          `DingTalk refused the credentials for an access token (${said}); check clientId and clientSecret.`,
          { ...options, retryable: false },
        );
      }
      throw new DingTalkError(
        "dingtalk.send_failed",
        `DingTalk accessToken request failed (${said}).`,
        options,
      );
    }
    const parsed = tokenSchema.safeParse(response.body);
    if (!parsed.success) {
      throw new DingTalkError(
        "dingtalk.bad_response",
        "DingTalk accessToken answer has no accessToken/expireIn.",
      );
    }
    const lifetimeMs = parsed.data.expireIn * 1000;
    // Refresh early: 5 minutes before expiry, or halfway for (test) tokens shorter than 10 minutes.
    const marginMs = Math.min(5 * 60 * 1000, lifetimeMs / 2);
    this.cached = {
      token: parsed.data.accessToken,
      refreshAt: this.settings.clock.now() + lifetimeMs - marginMs,
    };
    return parsed.data.accessToken;
  }
}
