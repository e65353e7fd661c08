import type { ChannelStatus } from "@almanac/core";
import type { DiscordErrorCode } from "./errors.js";

/** A gateway close that reconnecting cannot fix, explained for the admin API. */
export interface FatalClose {
  readonly code: number;
  readonly errorCode: DiscordErrorCode;
  readonly detail: string;
}

const FATAL_CLOSES: Readonly<Record<number, Omit<FatalClose, "code">>> = {
  4004: {
    errorCode: "discord.auth_failed",
    detail:
      "Discord rejected the bot token (gateway close 4004 Authentication failed). Reset the token under " +
      "Bot in the developer portal and update the Discord token setting.",
  },
  4010: {
    errorCode: "discord.gateway_refused",
    detail: "Discord refused the shard (close 4010 Invalid shard).",
  },
  4011: {
    errorCode: "discord.gateway_refused",
    detail:
      "Discord requires sharding for this bot (close 4011 Sharding required); one connection is not enough.",
  },
  4012: { errorCode: "discord.gateway_refused", detail: "Discord refused the gateway version (close 4012)." },
  4013: {
    errorCode: "discord.gateway_refused",
    detail: "Discord refused the intents (close 4013 Invalid intents).",
  },
  4014: {
    errorCode: "discord.gateway_refused",
    detail:
      "Discord refused a privileged intent (close 4014 Disallowed intents). Turn on Message Content Intent " +
      "under Bot → Privileged Gateway Intents in the developer portal.",
  },
};

/** The fatal meaning of a gateway close code, or `undefined` when discord.js reconnects by itself. */
export function fatalClose(code: number): FatalClose | undefined {
  const known = FATAL_CLOSES[code];
  return known === undefined ? undefined : { code, ...known };
}

/** The adapter's connection state as reported by `status()`, stamped with the injected clock. */
export class ConnectionStatus {
  #state: ChannelStatus["state"] = "connecting";
  #detail: string | undefined = "not started";
  #lastEventAt: number | undefined;
  readonly #clock: () => number;

  constructor(clock: () => number) {
    this.#clock = clock;
  }

  /** Sets the state; `detail` explains it (cleared when omitted). */
  set(state: ChannelStatus["state"], detail?: string): void {
    this.#state = state;
    this.#detail = detail;
  }

  /** Records that something arrived from Discord now; returns the time. */
  touch(): number {
    this.#lastEventAt = this.#clock();
    return this.#lastEventAt;
  }

  /** The current state alone. */
  get state(): ChannelStatus["state"] {
    return this.#state;
  }

  /** The status as the admin API shows it. */
  snapshot(channel: string): ChannelStatus {
    return {
      channel,
      state: this.#state,
      ...(this.#detail === undefined ? {} : { detail: this.#detail }),
      ...(this.#lastEventAt === undefined ? {} : { lastEventAt: this.#lastEventAt }),
    };
  }
}
