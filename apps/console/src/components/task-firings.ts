import { html } from "htm/preact";
import { formatTime, isoTime } from "../read.js";
import { formatInZone, formatUntil } from "../task-words.js";
import type { Firing, FiringState } from "../tasks.js";

/** The states a firing ends in; the others are on their way. */
const FINAL: readonly FiringState[] = ["delivered", "silent", "failed", "missed", "uncertain"];

/** What each state means, for the badge's hover text. */
const MEANING: Record<FiringState, string> = {
  claimed: "Its turn is running",
  answered: "The reply is written and about to be sent",
  delivering: "The reply is being sent",
  delivered: "The reply was delivered",
  silent: "A heartbeat with nothing to say: nothing was sent",
  failed: "It failed past its retries",
  missed: "Due while the server was down, past the grace: reported, not run",
  uncertain: "The server stopped while sending: it may or may not have arrived, and is not sent again",
};

/** A firing's state as a badge, its meaning on hover. */
export function FiringStateBadge(props: { state: FiringState }) {
  return html`<span class=${`state firing-state ${props.state}`} title=${MEANING[props.state]}>${props.state}</span>`;
}

/**
 * Firings, newest first: each with its state, when it was due (in `timeZoneOf` its task's time zone), whether it
 * was late, its failed attempts, its last error, when it is tried again, and the reply as text (never as HTML).
 * `labelOf` names a firing's task where the list mixes tasks.
 */
export function FiringList(props: {
  firings: readonly Firing[];
  timeZoneOf: (firing: Firing) => string | undefined;
  now: number;
  labelOf?: (firing: Firing) => string;
  empty: string;
}) {
  if (props.firings.length === 0) return html`<p class="muted">${props.empty}</p>`;
  return html`<ol class="firings">
    ${props.firings.map((firing) => {
      const zone = props.timeZoneOf(firing);
      const due = zone === undefined ? formatTime(firing.dueAt) : formatInZone(firing.dueAt, zone);
      const waiting = !FINAL.includes(firing.state) && firing.retryAt !== undefined;
      return html`<li class="firing" data-firing=${firing.id} data-state=${firing.state}>
        <div class="firing-head">
          <${FiringStateBadge} state=${firing.state} />
          ${firing.late ? html`<span class="badge mark" title="It ran after its time">late</span>` : null}
          ${firing.missed ? html`<span class="badge mark" title="Too late to run: the reply says so">missed</span>` : null}
          ${props.labelOf ? html`<span class="firing-task">${props.labelOf(firing)}</span>` : null}
          <span class="firing-due">due <time datetime=${isoTime(firing.dueAt)}>${due}</time></span>
          ${
            firing.attempts === 0
              ? null
              : html`<span class="muted small firing-attempts">
                  ${firing.attempts} failed attempt${firing.attempts === 1 ? "" : "s"}
                </span>`
          }
        </div>
        ${firing.lastError ? html`<p class="firing-error">${firing.lastError}</p>` : null}
        ${
          waiting && firing.retryAt !== undefined
            ? html`<p class="muted small">Next attempt ${formatUntil(firing.retryAt, props.now)}.</p>`
            : null
        }
        ${firing.reply ? html`<div class="firing-reply">${firing.reply}</div>` : null}
      </li>`;
    })}
  </ol>`;
}
