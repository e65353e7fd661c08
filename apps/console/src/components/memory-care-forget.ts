import "./memory-care.css";
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import { formatAgo, formatTime } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";
import {
  FORGET_BACKUP_DAYS,
  type ForgetReport,
  type ForgottenPhrase,
  readForgetReport,
  readForgotten,
  removedCount,
} from "./memory-care-read.js";

/** The server's shortest and longest phrase (shorter would remove half the memory). */
const MIN_PHRASE = 3;
const MAX_PHRASE = 200;

/** A date as the owner reads it: day and time in the browser's zone. */
function localDate(ms: number | undefined): string {
  return ms === undefined
    ? "—"
    : new Date(ms).toLocaleString([], { dateStyle: "medium", timeStyle: "short" });
}

/** The question asked before a forget: what will happen, plainly; the safe answer has the focus. */
function ForgetConfirmation(props: {
  phrase: string;
  busy: boolean;
  onForget: () => void;
  onKeep: () => void;
}) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  const keptUntil = localDate(Date.now() + FORGET_BACKUP_DAYS * 86_400_000);
  return html`<div class="memory-care-confirm" role="group" aria-label=${`Forget “${props.phrase}”?`}>
    <p><strong>Forget “${props.phrase}”?</strong></p>
    <ul>
      <li>Every line that mentions it (ignoring case and spacing) is removed from MEMORY.md, every daily log and
        every topic file.</li>
      <li>The previous versions of those files stay in the server's backups until about ${keptUntil}, so a mistake
        can be undone by hand; then the lines are scrubbed from the backups too.</li>
      <li>The phrase is recorded as forgotten: the summarizer and consolidation never write a line with it back.</li>
    </ul>
    <p class="muted small">A common word removes every line with that word: be specific.</p>
    <div class="actions">
      <button type="button" class="danger" disabled=${props.busy} onClick=${props.onForget}>
        ${props.busy ? "Forgetting…" : "Forget it"}
      </button>
      <button type="button" class="secondary" ref=${keep} disabled=${props.busy} onClick=${props.onKeep}>
        Keep it
      </button>
    </div>
  </div>`;
}

/** What a forget removed: each line with its file, or that nothing mentioned the phrase. */
function ForgetResult(props: { report: ForgetReport }) {
  const { report } = props;
  const count = removedCount(report);
  return html`<div class="memory-care-result" role="status">
    ${
      count === 0
        ? html`<p class="ok">Nothing mentioned “${report.phrase}”; recorded as forgotten, so it is never written back.</p>`
        : html`<p class="ok">
              Forgot “${report.phrase}”: ${count} line${count === 1 ? "" : "s"} removed from${" "}
              ${report.files.length} file${report.files.length === 1 ? "" : "s"}.
            </p>
            <ul class="memory-care-removed">
              ${report.files.map(
                (file) => html`<li data-file=${file.path}>
                  <span class="file-path">${file.path}</span>
                  <ul>
                    ${file.removed.map((line) => html`<li><code class="removed-line">${line}</code></li>`)}
                  </ul>
                </li>`,
              )}
            </ul>
            <p class="muted small">The previous versions stay in the backups until ${localDate(report.backupsKeptUntil)}.</p>`
    }
  </div>`;
}

function ForgottenList(props: { phrases: readonly ForgottenPhrase[] }) {
  if (props.phrases.length === 0) return html`<p class="muted small">Nothing forgotten yet.</p>`;
  return html`<ul class="memory-care-forgotten" aria-label="Forgotten phrases">
    ${props.phrases.map(
      (entry) => html`<li>
        <span class="forgotten-phrase">${entry.phrase}</span>
        <span class="muted small" title=${formatTime(entry.at)}>${formatAgo(entry.at)}${entry.by ? ` by ${entry.by}` : ""}</span>
        <span class="muted small">
          ${entry.purgedAt === undefined ? `backups kept until ${localDate(entry.purgeBackupsAt)}` : "backups scrubbed"}
        </span>
      </li>`,
    )}
  </ul>`;
}

/**
 * Forget: a phrase, a question that says what will happen, then what was removed; and the phrases forgotten so
 * far. `onForgot` runs after a forget that removed lines (the page shows the files again).
 */
export function ForgetCard(props: { onForgot: () => void }) {
  const forgotten = useLoad(async () => readForgotten(await api("/api/memory/forgotten")), "forgotten");
  const [phrase, setPhrase] = useState("");
  const [asking, setAsking] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [report, setReport] = useState<ForgetReport>();
  const [error, setError] = useState<unknown>();
  const askButton = useRef<HTMLButtonElement>(null);
  const typed = phrase.trim();

  const ask = (event: Event) => {
    event.preventDefault();
    if (typed.length < MIN_PHRASE) return;
    setReport(undefined);
    setError(undefined);
    setAsking(typed);
  };
  const forget = async () => {
    if (asking === undefined) return;
    setBusy(true);
    try {
      const answer = readForgetReport(
        await api("/api/memory/forget", { method: "POST", body: { phrase: asking, via: "console" } }),
      );
      setReport(answer);
      setPhrase("");
      setAsking(undefined);
      forgotten.reload();
      if (removedCount(answer) > 0) props.onForgot();
    } catch (caught) {
      setError(caught);
      setAsking(undefined);
    } finally {
      setBusy(false);
    }
  };

  return html`<div class="card memory-care-forget">
    <h2>Forget</h2>
    <p class="muted small">Have the assistant forget a fact: every line of memory that mentions a phrase goes.</p>
    <form class="memory-care-row" aria-label="Forget a phrase" onSubmit=${ask}>
      <input
        name="phrase"
        aria-label="Phrase to forget"
        placeholder="A distinctive phrase, like “locker code 5521”"
        maxlength=${MAX_PHRASE}
        value=${phrase}
        readonly=${asking !== undefined}
        onInput=${(event: Event) => setPhrase((event.currentTarget as HTMLInputElement).value)}
      />
      <button type="submit" ref=${askButton} aria-expanded=${asking !== undefined} disabled=${typed.length < MIN_PHRASE}>
        Forget…
      </button>
    </form>
    ${
      asking === undefined
        ? null
        : html`<${ForgetConfirmation}
            phrase=${asking}
            busy=${busy}
            onForget=${forget}
            onKeep=${() => {
              setAsking(undefined);
              askButton.current?.focus();
            }}
          />`
    }
    <${ErrorBox} error=${error} />
    ${report ? html`<${ForgetResult} report=${report} />` : null}
    <h3>Forgotten${forgotten.data?.length ? html` <span class="muted small">${forgotten.data.length}</span>` : null}</h3>
    <${ErrorBox} error=${forgotten.error} />
    ${forgotten.data ? html`<${ForgottenList} phrases=${forgotten.data} />` : null}
  </div>`;
}
