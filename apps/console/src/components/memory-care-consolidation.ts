import "./memory-care.css";
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import { asRecord, formatAgo, formatTime, str } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";
import {
  type ConsolidationPhase,
  type ConsolidationRun,
  type ConsolidationStatus,
  consolidationPhase,
  lastFinished,
  readConsolidation,
  runSummary,
  triggerWords,
  unfinished,
} from "./memory-care-read.js";

/** How often the status is asked again while a run works (the server sends no event for consolidation). */
const POLL_MS = 1000;
/** After the nightly time, the status is asked again this much later (the run has started by then). */
const AFTER_NIGHTLY_MS = 3000;
/** The longest delay a browser timer takes (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why the button is disabled when consolidation is off. */
const OFF_REASON =
  "Consolidation needs a model: set ALMANAC_MODEL_BASE_URL and ALMANAC_MODEL_NAME, then restart the server.";

/** A time in the browser's zone, with the day. */
function localTime(ms: number | undefined): string {
  return ms === undefined
    ? "—"
    : new Date(ms).toLocaleString([], {
        weekday: "short",
        day: "numeric",
        month: "short",
        hour: "2-digit",
        minute: "2-digit",
      });
}

/** The schedule in words: when the next nightly run is, or that only asked-for runs happen. */
function ScheduleLine(props: { status: ConsolidationStatus }) {
  const { status } = props;
  if (status.at === null)
    return html`<span>off: runs only when asked (<code>ALMANAC_CONSOLIDATE_AT=off</code>)</span>`;
  return html`<span>
    next run <time class="consolidation-next">${localTime(status.nextRunAt)}</time>
    <span class="muted small"> (nightly at ${status.at}, ${status.timeZone})</span>
  </span>`;
}

/** The run working now, or waiting for its retry, with a progress bar while it works. */
function CurrentRun(props: { run: ConsolidationRun | undefined; phase: ConsolidationPhase }) {
  const { run, phase } = props;
  if (phase === "retrying" && run)
    return html`<div class="consolidation-current warn" role="status">
      Attempt ${run.attempts} failed: ${run.lastError?.message || "no reason given"}.
      Trying again at ${localTime(run.nextAttemptAt)}.
    </div>`;
  if (phase !== "running") return null;
  const since = run?.startedAt ?? run?.createdAt;
  return html`<div class="consolidation-current" role="status">
    <progress aria-label="Consolidating"></progress>
    <span>
      ${run?.state === "pending" ? "Starting" : "Consolidating"} (${triggerWords(run?.trigger ?? "request")}${
        (run?.attempts ?? 0) > 1 ? `, attempt ${run?.attempts}` : ""
      })…${" "}
      ${since === undefined ? null : html`<span class="muted small" title=${formatTime(since)}>since ${formatAgo(since)}</span>`}
    </span>
  </div>`;
}

/** The last finished run: when, what it changed (each change on its line), or its failure. */
function LastRun(props: { run: ConsolidationRun | undefined }) {
  const { run } = props;
  if (run === undefined) return html`<dd class="consolidation-last">none yet</dd>`;
  const when = run.finishedAt ?? run.createdAt;
  return html`<dd class="consolidation-last">
    <span title=${formatTime(when)}>${formatAgo(when)}</span> (${triggerWords(run.trigger)}):${" "}
    <span class=${run.state === "failed" ? "consolidation-failed" : undefined}>${runSummary(run)}</span>
    ${
      run.changes.length > 0
        ? html`<ul class="consolidation-changes">
            ${run.changes.map((change) => html`<li>${change}</li>`)}
          </ul>`
        : null
    }
    ${run.note && run.state === "done" ? html`<div class="muted small">${run.note}</div>` : null}
  </dd>`;
}

/** The phase as a badge. */
const PHASE_CLASS: Record<ConsolidationPhase, string> = {
  off: "disabled",
  running: "running",
  retrying: "pending",
  failed: "error",
  idle: "ready",
};

/**
 * Consolidation: off, the next nightly run, a run working now, the last run and what it changed (or why it
 * failed), and Consolidate now. `onFinished` runs when a run asked for here or seen working has finished (it may
 * have changed files).
 */
export function ConsolidationCard(props: { onFinished: () => void }) {
  const status = useLoad(
    async () => readConsolidation(await api("/api/memory/consolidation")),
    "consolidation",
  );
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<unknown>();
  const data = status.data;
  const phase = data ? consolidationPhase(data, Date.now()) : undefined;
  const working = phase === "running" || asking;

  // While a run works the status is asked again every second; when idle, once the nightly run has begun.
  useEffect(() => {
    if (status.loading || data === undefined) return;
    const wake =
      phase === "running"
        ? POLL_MS
        : phase === "retrying"
          ? (unfinished(data)?.nextAttemptAt ?? 0) - Date.now() + AFTER_NIGHTLY_MS
          : data.nextRunAt === undefined
            ? undefined
            : data.nextRunAt - Date.now() + AFTER_NIGHTLY_MS;
    if (wake === undefined || wake > MAX_TIMER_MS) return;
    const timer = setTimeout(status.reload, Math.max(POLL_MS, wake));
    return () => clearTimeout(timer);
  }, [status.loading, data, phase]);

  // The run asked for here, or seen working: once it has finished, the page reads the files again. A fast run
  // may be done before the page ever sees it working, so the id the request answered is followed too.
  const followed = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (data === undefined) return;
    const run = data.runs.find((candidate) => candidate.id === followed.current);
    if (
      followed.current !== undefined &&
      (run === undefined || run.state === "done" || run.state === "failed")
    ) {
      followed.current = undefined;
      props.onFinished();
    }
    if (phase === "running") followed.current = unfinished(data)?.id ?? followed.current;
  }, [data]);

  const consolidate = async () => {
    setAsking(true);
    setError(undefined);
    try {
      const answer = asRecord(await api("/api/memory/consolidate", { method: "POST" }));
      followed.current = str(answer.id) || undefined;
    } catch (caught) {
      setError(caught);
    } finally {
      setAsking(false);
      status.reload();
    }
  };

  const off = data?.enabled === false;
  return html`<div class="card memory-care-consolidation">
    <div class="title-row">
      <h2>Consolidation</h2>
      <button
        type="button"
        disabled=${data === undefined || off || working}
        aria-describedby=${off ? "consolidation-off-reason" : undefined}
        onClick=${consolidate}
      >
        ${working ? "Consolidating…" : "Consolidate now"}
      </button>
    </div>
    <p class="muted small">Folds what the daily logs learned into MEMORY.md, keeping it within its budget.</p>
    <${ErrorBox} error=${status.error} />
    <${ErrorBox} error=${error} />
    ${
      data === undefined
        ? status.error === undefined
          ? html`<p class="muted">Loading…</p>`
          : null
        : off
          ? html`<p class="consolidation-off" id="consolidation-off-reason">
              <span class="state disabled">off</span> ${OFF_REASON}
            </p>`
          : html`
            <${CurrentRun} run=${unfinished(data)} phase=${phase} />
            <dl class="facts consolidation-facts">
              <dt>State</dt>
              <dd><span class=${`state consolidation-phase ${PHASE_CLASS[phase ?? "idle"]}`}>${phase}</span></dd>
              <dt>Nightly</dt>
              <dd class="consolidation-schedule"><${ScheduleLine} status=${data} /></dd>
              <dt>Last run</dt>
              <${LastRun} run=${lastFinished(data)} />
            </dl>
          `
    }
  </div>`;
}
