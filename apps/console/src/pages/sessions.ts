import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { type LiveState, useDebounced, useLiveEvents } from "../live.js";
import { asArray, asRecord, formatAgo, formatTime, num, str } from "../read.js";
import { Link } from "../router.js";
import { ErrorBox, useLoad } from "../ui.js";

interface SessionRow {
  readonly key: string;
  /** The first message, shortened by the server (absent for sessions stored before titles were). */
  readonly title: string;
  readonly channel: string;
  readonly lastActivity: number | undefined;
  readonly messageCount: number;
  readonly contextTokens: number;
  readonly compactions: number;
}

async function loadSessions(): Promise<SessionRow[]> {
  const body = asRecord(await api("/api/sessions"));
  return asArray(body.sessions)
    .map(asRecord)
    .map((session) => ({
      key: str(session.key),
      title: str(session.title),
      channel: str(session.channel),
      lastActivity: num(session.lastActivity),
      messageCount: num(session.messageCount) ?? 0,
      contextTokens: num(session.contextTokens) ?? 0,
      compactions: num(session.compactions) ?? 0,
    }));
}

/** A row updated with the numbers a `turn-finished` event carries. */
function withFigures(row: SessionRow, figures: Record<string, unknown>): SessionRow {
  return {
    ...row,
    lastActivity: num(figures.lastActivity) ?? row.lastActivity,
    messageCount: num(figures.messageCount) ?? row.messageCount,
    contextTokens: num(figures.contextTokens) ?? row.contextTokens,
    compactions: num(figures.compactions) ?? row.compactions,
  };
}

/** The connection state next to a page title: live, or why not. */
export function LiveBadge(props: { state: LiveState }) {
  const label =
    props.state === "live" ? "live" : props.state === "connecting" ? "connecting…" : "reconnecting…";
  const tone = props.state === "live" ? "ready" : "connecting";
  return html`<span class=${`state ${tone} live-badge`} title="Updates pushed by the server (GET /api/events)"
    >${label}</span
  >`;
}

/** Every stored session, newest activity first, updated live; running turns are marked; a row opens the session. */
export function SessionsPage() {
  const sessions = useLoad(loadSessions, "sessions");
  // Rows patched by live events since the last load, and the sessions whose turn runs right now.
  const [patched, setPatched] = useState<ReadonlyMap<string, SessionRow>>(new Map());
  const [running, setRunning] = useState<ReadonlySet<string>>(new Set());
  const reload = useDebounced(sessions.reload);
  const known = (key: string) => (sessions.data ?? []).some((row) => row.key === key);
  const live = useLiveEvents((event) => {
    const key = str(event.data.sessionKey);
    switch (event.type) {
      case "snapshot": {
        const turns = asArray(asRecord(event.data.sessions).running).map(asRecord);
        setRunning(new Set(turns.map((turn) => str(turn.sessionKey))));
        reload();
        break;
      }
      case "turn-started":
        setRunning((previous) => new Set(previous).add(key));
        if (!known(key)) reload();
        break;
      case "turn-finished": {
        setRunning((previous) => {
          const next = new Set(previous);
          next.delete(key);
          return next;
        });
        const figures = asRecord(event.data.session);
        const row = (sessions.data ?? []).find((candidate) => candidate.key === key);
        if (row && event.data.session !== undefined)
          setPatched((previous) => new Map(previous).set(key, withFigures(row, figures)));
        else reload();
        break;
      }
      case "session-created":
      case "session-reset":
      case "session-deleted":
      case "session-compacted":
        reload();
        break;
      default:
        break;
    }
  });
  // A patch counts until a load brings the same activity or newer.
  const rows = (sessions.data ?? [])
    .map((row) => {
      const patch = patched.get(row.key);
      return patch && (patch.lastActivity ?? 0) > (row.lastActivity ?? 0) ? patch : row;
    })
    .sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
  return html`
    <section>
      <div class="title-row">
        <h1>Sessions <${LiveBadge} state=${live} /></h1>
        <button class="secondary" onClick=${reload} disabled=${sessions.loading}>Refresh</button>
      </div>
      <${ErrorBox} error=${sessions.error} />
      ${
        rows.length === 0 && !sessions.loading
          ? html`<p class="muted">No sessions yet. Chat on any channel (or on the Chat page) to start one.</p>`
          : html`
            <div class="table-wrap">
              <table class="sessions">
                <thead>
                  <tr>
                    <th>Session</th><th>Channel</th><th>Last activity</th>
                    <th class="num">Messages</th><th class="num">Tokens</th><th class="num">Compactions</th>
                  </tr>
                </thead>
                <tbody>
                  ${rows.map(
                    (row) => html`
                      <tr data-session=${row.key} class=${running.has(row.key) ? "running" : ""}>
                        <td class="key" data-label="Session">
                          <${Link} href=${`/sessions/${encodeURIComponent(row.key)}`}>${row.key}<//>
                          ${running.has(row.key) ? html` <span class="state running">replying…</span>` : null}
                          ${row.title ? html`<div class="session-title">${row.title}</div>` : null}
                        </td>
                        <td data-label="Channel"><span class="badge">${row.channel}</span></td>
                        <td data-label="Last activity" title=${formatTime(row.lastActivity)}>
                          ${formatAgo(row.lastActivity)}
                        </td>
                        <td class="num" data-label="Messages">${row.messageCount}</td>
                        <td class="num" data-label="Tokens">${row.contextTokens.toLocaleString()}</td>
                        <td class="num" data-label="Compactions">${row.compactions}</td>
                      </tr>
                    `,
                  )}
                </tbody>
              </table>
            </div>
          `
      }
    </section>
  `;
}
