import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, api, jobRetryPath } from "../api.js";
import { BackupsCard } from "../components/backup-list.js";
import { FactList, formatValue, humanLabel } from "../components/facts.js";
import { useDebounced, useLiveEvents } from "../live.js";
import { asArray, asRecord, formatAgo, formatTime, num, str } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";
import { LiveBadge } from "./sessions.js";

/** Reloads a card when one of the live event types it shows arrives (and after every reconnect's snapshot). */
function useReloadOn(types: readonly string[], reload: () => void): void {
  const later = useDebounced(reload);
  useLiveEvents((event) => {
    if (event.type === "snapshot" || types.includes(event.type)) later();
  });
}

function Channels() {
  const channels = useLoad(
    async () => asArray(asRecord(await api("/api/channels")).channels).map(asRecord),
    "channels",
  );
  useReloadOn(["channel-changed"], channels.reload);
  return html`
    <div class="card">
      <h2>Channels</h2>
      <${ErrorBox} error=${channels.error} />
      <ul class="channels">
        ${(channels.data ?? []).map(
          (channel) => html`
            <li>
              <span class="channel-name">${str(channel.channel)}</span>
              <span class=${`state ${str(channel.state)}`}>${str(channel.state)}</span>
              ${channel.detail ? html`<span class="muted small">${str(channel.detail)}</span>` : null}
              ${channel.lastEventAt ? html`<span class="muted small">last event ${formatAgo(channel.lastEventAt)}</span>` : null}
            </li>
          `,
        )}
      </ul>
    </div>
  `;
}

function SummarizerQueue() {
  const queue = useLoad(async () => asRecord(await api("/api/summarizer/jobs")), "jobs");
  useReloadOn(["queue-changed"], queue.reload);
  const [retryError, setRetryError] = useState<unknown>();
  const retry = async (id: string) => {
    setRetryError(undefined);
    try {
      await api(jobRetryPath(id), { method: "POST" });
      queue.reload();
    } catch (error) {
      setRetryError(error);
    }
  };
  const stats = asRecord(queue.data?.stats);
  const jobs = asArray(queue.data?.jobs).map(asRecord).reverse();
  return html`
    <div class="card">
      <div class="title-row">
        <h2>Summarizer queue</h2>
        <button class="secondary" onClick=${queue.reload}>Refresh</button>
      </div>
      <${ErrorBox} error=${queue.error} />
      ${queue.data?.enabled === false ? html`<p class="muted">Disabled: no model is configured.</p>` : null}
      <dl class="facts inline">
        ${["pending", "running", "parked", "done"].map((name) => html`<dt>${name}</dt><dd>${num(stats[name]) ?? 0}</dd>`)}
      </dl>
      <${ErrorBox} error=${retryError} />
      ${
        jobs.length > 0
          ? html`<div class="table-wrap"><table class="jobs">
              <thead><tr><th>Job</th><th>State</th><th>Session</th><th class="num">Messages</th><th>Updated</th><th></th></tr></thead>
              <tbody>
                ${jobs.slice(0, 50).map(
                  (job) => html`<tr>
                    <td data-label="Job" class="key">${str(job.reason)} #${num(job.seq) ?? "?"}</td>
                    <td data-label="State"><span class=${`state ${str(job.state)}`}>${str(job.state)}</span>
                      ${job.lastError ? html`<div class="muted small">${str(asRecord(job.lastError).message)}</div>` : null}</td>
                    <td data-label="Session" class="key">${str(job.sessionKey)}</td>
                    <td data-label="Messages" class="num">${num(job.messageCount) ?? 0}</td>
                    <td data-label="Updated" title=${formatTime(job.updatedAt)}>${formatAgo(job.updatedAt)}</td>
                    <td>${job.state === "parked" ? html`<button class="secondary" onClick=${() => retry(str(job.id))}>Retry</button>` : null}</td>
                  </tr>`,
                )}
              </tbody>
            </table></div>`
          : html`<p class="muted">No jobs.</p>`
      }
    </div>
  `;
}

/** The search the index serves, in words. */
function embeddingLine(embedding: Record<string, unknown>): string {
  const failures = num(embedding.consecutiveFailures) ?? 0;
  if (embedding.configured !== true) return "text search only (no embedding model configured)";
  const model = str(embedding.model);
  const mode = str(embedding.mode) === "hybrid" ? "hybrid search" : "text search only for now";
  const paused = str(embedding.circuit) === "open" ? `, embedding paused after ${failures} failures` : "";
  return `${mode}${model ? ` with ${model}` : ""}${paused}`;
}

/** The last sync in words: when, and what it did. */
function lastSyncLine(lastSync: Record<string, unknown>): string {
  if (num(lastSync.at) === undefined) return "not yet";
  const report = asRecord(lastSync.report);
  const indexed = num(report.filesIndexed) ?? 0;
  const chunks = num(report.chunksIndexed) ?? 0;
  const took = num(report.durationMs);
  return `${formatAgo(lastSync.at)}: ${indexed} file${indexed === 1 ? "" : "s"} indexed, ${chunks} chunk${chunks === 1 ? "" : "s"}${took === undefined ? "" : ` in ${took} ms`}`;
}

/** The memory index: its state and sizes in words, every field it reports folded away below. */
function IndexFacts(props: { index: Record<string, unknown> }) {
  const { index } = props;
  const progress = asRecord(index.progress);
  const repair = asRecord(index.repair);
  const embedded = num(index.embeddedChunks) ?? 0;
  const pending = num(index.pendingChunks) ?? 0;
  const state = str(index.state, "unknown");
  const stateClass = state === "idle" ? "ready" : state === "rebuilding" ? "error" : "running";
  return html`
    <dl class="facts">
      <dt>State</dt>
      <dd>
        <span class=${`state ${stateClass}`}>${state}</span>
        ${num(progress.total) === undefined ? null : ` ${str(progress.phase)} ${num(progress.done) ?? 0} of ${num(progress.total)}`}
      </dd>
      <dt>Files</dt><dd>${(num(index.files) ?? 0).toLocaleString()}</dd>
      <dt>Chunks</dt>
      <dd>
        ${(num(index.chunks) ?? 0).toLocaleString()}
        ${
          // Without an embedding model nothing is embedded, nor waiting to be.
          asRecord(index.embedding).configured === true
            ? ` (${embedded.toLocaleString()} embedded${pending > 0 ? `, ${pending.toLocaleString()} waiting` : ""})`
            : null
        }
      </dd>
      <dt>Embeddings</dt><dd>${embeddingLine(asRecord(index.embedding))}</dd>
      <dt>Last sync</dt><dd title=${formatTime(asRecord(index.lastSync).at)}>${lastSyncLine(asRecord(index.lastSync))}</dd>
      <dt>Watching files</dt><dd>${index.watching === true ? "yes" : "no"}</dd>
      ${index.backend ? html`<dt>Backend</dt><dd>${str(index.backend)}</dd>` : null}
      ${
        index.repair === undefined
          ? null
          : html`<dt>Repair</dt>
            <dd class="warn">
              ${str(repair.reason)}: moved to <code>${str(repair.movedTo)}</code> ${formatAgo(repair.at)}
              ${num(repair.rebuiltAt) === undefined ? ", rebuilding" : `, rebuilt ${formatAgo(repair.rebuiltAt)}`}
            </dd>`
      }
      ${index.lastError === undefined ? null : html`<dt>Last error</dt><dd class="warn">${formatValue("lastError", index.lastError)}</dd>`}
    </dl>
    <details>
      <summary>Every field the index reports</summary>
      <${FactList} record=${index} />
    </details>
  `;
}

function IndexStatus() {
  const index = useLoad(async () => {
    try {
      return asRecord(await api("/api/memory/index"));
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return undefined;
      throw error;
    }
  }, "index");
  useReloadOn(["index-changed"], index.reload);
  return html`
    <div class="card">
      <h2>Memory index</h2>
      <${ErrorBox} error=${index.error} />
      ${
        index.loading && !index.data
          ? html`<p class="muted">Loading…</p>`
          : index.data
            ? html`<${IndexFacts} index=${index.data} />`
            : html`<p class="muted">Not available on this server.</p>`
      }
    </div>
  `;
}

/** The configuration, one section under another, each setting with a label and its value in words. */
function Configuration(props: { config: Record<string, unknown> }) {
  const entries = Object.entries(props.config);
  const general = Object.fromEntries(
    entries.filter(([, value]) => typeof value !== "object" || value === null),
  );
  const sections = entries.filter(([, value]) => typeof value === "object" && value !== null);
  return html`<div class="config">
    ${Object.keys(general).length > 0 ? html`<${FactList} record=${general} />` : null}
    ${sections.map(
      ([name, value]) => html`<h3 title=${name}>${humanLabel(name)}</h3>
        ${
          Object.keys(asRecord(value)).length === 0
            ? html`<p class="muted small">Nothing set.</p>`
            : html`<${FactList} record=${asRecord(value)} />`
        }`,
    )}
  </div>`;
}

function ServerInfo() {
  const info = useLoad(async () => asRecord(await api("/api/info")), "info");
  const data = info.data;
  const model = asRecord(data?.model);
  const storage = asRecord(data?.storage);
  return html`
    <div class="card">
      <h2>Server and model</h2>
      <${ErrorBox} error=${info.error} />
      ${
        data
          ? html`
            <dl class="facts">
              <dt>Version</dt><dd>${str(data.version)}</dd>
              <dt>Started</dt><dd>${formatTime(data.startedAt)} (${formatAgo(data.startedAt)})</dd>
              <dt>Model</dt>
              <dd>${model.configured === true ? str(model.name) : html`<span class="state error">not configured</span> set ${asArray(model.missing).map(String).join(", ")}`}</dd>
              <dt>Token counter</dt><dd>${str(data.tokenCounter)}</dd>
              <dt>Storage</dt>
              <dd>${storage.ok === false ? html`<span class="state error">${str(storage.code)}</span> since ${formatTime(Date.parse(str(storage.since)))}: ${str(storage.hint)}` : "writable"}</dd>
              ${storage.dataDir ? html`<dt>Data directory</dt><dd><code>${str(storage.dataDir)}</code></dd>` : null}
            </dl>
            <details>
              <summary>Configuration (secrets shown as ***)</summary>
              <${Configuration} config=${asRecord(data.config)} />
            </details>
          `
          : null
      }
    </div>
  `;
}

/** Channels, the summarizer queue, the memory index, backups and the server's configuration, updated live. */
export function SystemPage() {
  const live = useLiveEvents(() => {});
  return html`
    <section class="system">
      <h1>System <${LiveBadge} state=${live} /></h1>
      <div class="system-grid">
        <${ServerInfo} />
        <${Channels} />
        <${IndexStatus} />
        <${BackupsCard} />
        <${SummarizerQueue} />
      </div>
    </section>
  `;
}
