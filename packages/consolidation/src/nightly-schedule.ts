import { describeError, type Logger, UserError } from "@almanac/core";
import { nextFireAfter, nextFireTimes, type Schedule, type TaskClock } from "@almanac/tasks";

/** `HH:MM`, 24 h. */
const LOCAL_TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;

/**
 * The nightly slot at local time `at` (`HH:MM`) in `timeZone`, as a cron schedule: croner does the local-time
 * arithmetic (a time skipped or repeated by a daylight-saving change included), as it does for tasks.
 */
export function nightlySchedule(at: string, timeZone: string): Schedule {
  const match = LOCAL_TIME.exec(at);
  if (match === null) {
    throw new UserError(
      "config.invalid",
      `The consolidation time "${at}" is not a local time; write it as HH:MM (e.g. 03:30), or "off".`,
    );
  }
  return { kind: "cron", expression: `${Number(match[2])} ${Number(match[1])} * * *`, timeZone };
}

/** The latest slot at or before `now`, if any in the last two days. */
function latestSlot(schedule: Schedule, now: number): number | undefined {
  return nextFireTimes(schedule, now - 2 * 86_400_000, 4)
    .filter((time) => time <= now)
    .at(-1);
}

/** The first slot after `now`. */
function nextSlot(schedule: Schedule, now: number): number | undefined {
  return nextFireAfter(schedule, now);
}

/** Options of {@link NightlyTrigger}. */
export interface NightlyTriggerOptions {
  readonly schedule: Schedule;
  readonly clock: TaskClock;
  readonly logger: Logger;
  /** The last slot a run was asked for (journaled by the owner of the trigger), `null` for none yet. */
  readonly lastSlot: () => number | null;
  /** Asks for the run of `slot`; the slot counts as taken once this resolves. */
  readonly onSlot: (slot: number) => Promise<void>;
}

/** Longest sleep between checks: a clock that jumped (a suspended machine) is noticed within a minute. */
const MAX_SLEEP_MS = 60_000;

/**
 * Fires once per slot that passed since the last one: at the slot while the server runs, and once at start for
 * nights missed while it was down (one run, not one per night).
 */
export class NightlyTrigger {
  readonly #options: NightlyTriggerOptions;
  #timer: unknown;
  #stopped = false;

  constructor(options: NightlyTriggerOptions) {
    this.#options = options;
  }

  /** Checks for a missed slot now, then keeps checking until {@link stop}. */
  async start(): Promise<void> {
    this.#stopped = false;
    await this.#check();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#options.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** The latest slot at or before now (ms since the epoch). */
  latestSlot(): number | undefined {
    return latestSlot(this.#options.schedule, this.#options.clock.now());
  }

  /** The next slot (ms since the epoch). */
  nextRunAt(): number | undefined {
    return nextSlot(this.#options.schedule, this.#options.clock.now());
  }

  async #check(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    const { schedule, clock, logger } = this.#options;
    try {
      const slot = latestSlot(schedule, clock.now());
      const last = this.#options.lastSlot();
      if (slot !== undefined && (last === null || slot > last)) await this.#options.onSlot(slot);
    } catch (error) {
      logger.error({ error: describeError(error) }, "could not start the nightly consolidation");
    }
    if (this.#stopped) return;
    const now = clock.now();
    const next = nextSlot(schedule, now) ?? now + MAX_SLEEP_MS;
    this.#timer = clock.setTimeout(() => void this.#check(), Math.max(0, Math.min(next - now, MAX_SLEEP_MS)));
  }
}
