import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, api } from "../api.js";
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
      await api(`/api/summarizer/jobs/${encodeURIComponent(id)}/retry`, { method: "POST" });
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
            ? html`<dl class="facts">
                ${Object.entries(index.data).map(
                  ([name, value]) =>
                    html`<dt>${name}</dt><dd>${typeof value === "object" && value !== null ? html`<code>${JSON.stringify(value)}</code>` : String(value)}</dd>`,
                )}
              </dl>`
            : html`<p class="muted">Not available on this server.</p>`
      }
    </div>
  `;
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
              <dt>Started</dt><dd>${formatTime(data.startedAt)}</dd>
              <dt>Model</dt>
              <dd>${model.configured === true ? str(model.name) : html`<span class="state error">not configured</span> set ${asArray(model.missing).map(String).join(", ")}`}</dd>
              <dt>Token counter</dt><dd>${str(data.tokenCounter)}</dd>
              <dt>Storage</dt>
              <dd>${storage.ok === false ? html`<span class="state error">${str(storage.code)}</span> since ${str(storage.since)}: ${str(storage.hint)}` : "writable"}</dd>
            </dl>
            <details>
              <summary>Configuration (secrets shown as ***)</summary>
              <pre class="config">${JSON.stringify(data.config, null, 2)}</pre>
            </details>
          `
          : null
      }
    </div>
  `;
}

/** Channels, the summarizer queue, the memory index and the server's configuration, updated live. */
export function SystemPage() {
  const live = useLiveEvents(() => {});
  return html`
    <section class="system">
      <h1>System <${LiveBadge} state=${live} /></h1>
      <div class="system-grid">
        <${ServerInfo} />
        <${Channels} />
        <${IndexStatus} />
        <${SummarizerQueue} />
      </div>
    </section>
  `;
}
