import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { api, sessionPath } from "../api.js";
import { StoppedBadge } from "../components/chat-bubble.js";
import { ContextChart } from "../components/context-chart.js";
import { Markdown } from "../components/markdown.js";
import { asArray, asRecord, formatTime, isoTime, num, readMessage, STOPPED_MARK, str } from "../read.js";
import { Link } from "../router.js";
import { ErrorBox, useLoad } from "../ui.js";

/** A bar of tokens in context against the model's window. */
function TokenBar(props: { used: number; window: number }) {
  const ratio = props.window > 0 ? Math.min(1, props.used / props.window) : 0;
  const level = ratio > 0.85 ? "high" : ratio > 0.6 ? "mid" : "low";
  return html`
    <div class="token-bar" role="meter" aria-valuemin="0" aria-valuemax=${props.window} aria-valuenow=${props.used}
      aria-label="Tokens in context">
      <div class=${`fill ${level}`} style=${`width: ${(ratio * 100).toFixed(1)}%`}></div>
    </div>
    <p class="muted small">
      ${props.used.toLocaleString()} of ${props.window.toLocaleString()} tokens in context (${Math.round(ratio * 100)}%)
    </p>
  `;
}

/** One session: its messages with roles and marks, rolling summary, context use; Reset and Compact. */
export function SessionDetailPage(props: { sessionKey: string }) {
  const { sessionKey } = props;
  const detail = useLoad(async () => asRecord(await api(sessionPath(sessionKey))), sessionKey);
  const history = useLoad(() => api(`${sessionPath(sessionKey)}/context-history`), `${sessionKey}/history`);
  const [action, setAction] = useState<{ busy: boolean; result?: string; error?: unknown }>({ busy: false });

  const run = async (what: "reset" | "compact") => {
    if (what === "reset" && !confirm(`Archive ${sessionKey} and start it fresh?`)) return;
    setAction({ busy: true });
    try {
      const body = asRecord(await api(`${sessionPath(sessionKey)}/${what}`, { method: "POST" }));
      setAction({
        busy: false,
        result: what === "reset" ? "Session archived; it starts fresh." : str(body.result),
      });
      detail.reload();
      history.reload();
    } catch (error) {
      setAction({ busy: false, error });
    }
  };

  const data = detail.data;
  const stats = asRecord(data?.stats);
  const summary = asRecord(data?.summary);
  const messages = asArray(data?.messages).map(readMessage);
  const compaction = asRecord(data?.compaction);
  return html`
    <section class="session-detail">
      <p class="crumbs"><${Link} href="/sessions">← Sessions<//></p>
      <h1 class="key">${sessionKey}</h1>
      ${str(stats.title) ? html`<p class="session-title">${str(stats.title)}</p>` : null}
      <${ErrorBox} error=${detail.error} />
      ${
        data
          ? html`
            <div class="card">
              <${TokenBar} used=${num(data.contextTokens) ?? 0} window=${num(data.contextWindow) ?? 0} />
              <dl class="facts">
                <dt>Messages</dt><dd>${messages.length}</dd>
                <dt>Queued</dt><dd>${num(data.queued) ?? 0}</dd>
                <dt>Turns</dt><dd>${num(stats.turns) ?? 0}</dd>
                <dt>Compactions</dt><dd>${num(stats.compactions) ?? 0}</dd>
                <dt>Automatic compaction</dt>
                <dd class=${compaction.paused === true ? "warn" : ""} title=${str(compaction.detail)}>
                  ${compaction.paused === true ? "paused (Compact resumes it)" : `on, ${num(compaction.strikes) ?? 0} of ${num(compaction.maxStrikes) ?? 0} strikes`}
                </dd>
                <dt>Loaded</dt><dd>${data.loaded === true ? "yes" : "no"}</dd>
                <dt>Last activity</dt><dd>${formatTime(stats.lastActivity)}</dd>
              </dl>
              <div class="actions">
                <button class="secondary" onClick=${() => run("compact")} disabled=${action.busy}>Compact</button>
                <button class="danger" onClick=${() => run("reset")} disabled=${action.busy}>Reset</button>
              </div>
              ${action.result ? html`<p class="ok">${action.result}</p>` : null}
              <${ErrorBox} error=${action.error} />
            </div>
            <div class="card">
              <${ErrorBox} error=${history.error} />
              ${history.data ? html`<${ContextChart} history=${history.data} />` : null}
            </div>
            <h2>Rolling summary</h2>
            ${
              str(summary.text) === ""
                ? html`<p class="muted">No summary yet (nothing has been compacted).</p>`
                : html`<pre class="summary">${str(summary.text)}</pre>
                    <p class="muted small">Updated ${formatTime(summary.updatedAt)}</p>`
            }
            <h2>Messages</h2>
            <ol class="messages">
              ${messages.map(
                (message) => html`
                  <li class=${`message ${message.role}`}>
                    <div class="message-head">
                      <span class="role">${message.role}</span>
                      ${message.marks.map((mark) =>
                        mark === STOPPED_MARK
                          ? html`<${StoppedBadge} />`
                          : html`<span class="badge mark">${mark}</span>`,
                      )}
                      <time class="muted small" datetime=${isoTime(message.at)}>${formatTime(message.at)}</time>
                    </div>
                    ${
                      message.role === "assistant"
                        ? html`<${Markdown} class="message-text" text=${message.text} />`
                        : html`<div class="message-text">${message.text}</div>`
                    }
                  </li>
                `,
              )}
            </ol>
          `
          : null
      }
    </section>
  `;
}
