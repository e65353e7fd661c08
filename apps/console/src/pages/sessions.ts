import { html } from "htm/preact";
import { api } from "../api.js";
import { asArray, asRecord, formatAgo, formatTime, num, str } from "../read.js";
import { Link } from "../router.js";
import { ErrorBox, useLoad } from "../ui.js";

interface SessionRow {
  readonly key: string;
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
      channel: str(session.channel),
      lastActivity: num(session.lastActivity),
      messageCount: num(session.messageCount) ?? 0,
      contextTokens: num(session.contextTokens) ?? 0,
      compactions: num(session.compactions) ?? 0,
    }))
    .sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
}

/** Every stored session, newest activity first; a row opens the session. */
export function SessionsPage() {
  const sessions = useLoad(loadSessions, "sessions");
  const rows = sessions.data ?? [];
  return html`
    <section>
      <div class="title-row">
        <h1>Sessions</h1>
        <button class="secondary" onClick=${sessions.reload} disabled=${sessions.loading}>Refresh</button>
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
                      <tr>
                        <td class="key" data-label="Session">
                          <${Link} href=${`/sessions/${encodeURIComponent(row.key)}`}>${row.key}<//>
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
