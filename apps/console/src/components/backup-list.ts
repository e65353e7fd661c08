import "./memory-care.css";
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, apiBlob, backupPath } from "../api.js";
import { asArray, asRecord, formatAgo, formatTime, isoTime, num, str } from "../read.js";
import { describeError, ErrorBox, useLoad } from "../ui.js";
import { formatValue } from "./facts.js";

/** One archive in `<home>/backups/`. */
interface Backup {
  readonly name: string;
  readonly size: number;
  /** When it was begun (ms since the epoch). */
  readonly createdAt: number | undefined;
}

/** Reads `GET /api/backups` (newest first, as the server lists them). */
function readBackups(body: unknown): Backup[] {
  return asArray(asRecord(body).backups)
    .map(asRecord)
    .map((backup) => {
      const createdAt = Date.parse(str(backup.createdAt));
      return {
        name: str(backup.name),
        size: num(backup.size) ?? 0,
        createdAt: Number.isNaN(createdAt) ? undefined : createdAt,
      };
    })
    .filter((backup) => backup.name !== "");
}

/** A size as the page shows it (the one byte formatter of the console). */
function formatSize(bytes: number): string {
  return formatValue("sizeBytes", bytes);
}

/**
 * Saves a downloaded archive under its name: the bytes were fetched with the token in a header, so the link the
 * browser follows is an object URL of them, never an API URL (which would need the token in it).
 */
function saveAs(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.click();
  // Revoked later, not at once: the browser reads the URL after the click has returned.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** What the last action did, in a sentence. */
interface Outcome {
  readonly ok: boolean;
  readonly message: string;
}

/** Deleting asks first, in the page; the safe answer has the focus. */
function DeleteConfirmation(props: { name: string; onDelete: () => void; onKeep: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return html`<div class="backup-confirm" role="group" aria-label=${`Delete ${props.name}?`}>
    <span>Delete <code>${props.name}</code>? The archive is gone for good.</span>
    <div class="actions">
      <button type="button" class="danger" onClick=${props.onDelete}>Delete backup</button>
      <button type="button" class="secondary" ref=${keep} onClick=${props.onKeep}>Keep it</button>
    </div>
  </div>`;
}

function BackupRow(props: { backup: Backup; busy: boolean; onDownload: () => void; onDelete: () => void }) {
  const { backup } = props;
  const [confirming, setConfirming] = useState(false);
  const deleteButton = useRef<HTMLButtonElement>(null);
  return html`<li class="backup" data-backup=${backup.name}>
    <div class="backup-head">
      <code class="backup-name">${backup.name}</code>
      <span class="backup-size">${formatSize(backup.size)}</span>
      <time class="muted small" datetime=${isoTime(backup.createdAt)} title=${formatAgo(backup.createdAt)}>
        ${formatTime(backup.createdAt)}
      </time>
      <span class="actions">
        <button type="button" class="secondary" aria-label=${`Download ${backup.name}`} disabled=${props.busy}
          onClick=${props.onDownload}>Download</button>
        <button type="button" class="danger" aria-label=${`Delete ${backup.name}`} disabled=${props.busy}
          aria-expanded=${confirming} ref=${deleteButton} onClick=${() => setConfirming(true)}>Delete</button>
      </span>
    </div>
    ${
      confirming
        ? html`<${DeleteConfirmation}
            name=${backup.name}
            onDelete=${() => {
              setConfirming(false);
              props.onDelete();
            }}
            onKeep=${() => {
              setConfirming(false);
              deleteButton.current?.focus();
            }}
          />`
        : null
    }
  </li>`;
}

/** The archives of the data directory: make one now, download one, delete one (docs/backup.md). */
export function BackupsCard() {
  const backups = useLoad(async () => readBackups(await api("/api/backups")), "backups");
  const [creating, setCreating] = useState(false);
  const [busy, setBusy] = useState<string>();
  const [outcome, setOutcome] = useState<Outcome>();

  const create = async () => {
    setCreating(true);
    setOutcome(undefined);
    try {
      const made = asRecord(await api("/api/backups", { method: "POST" }));
      const files = num(made.files);
      setOutcome({
        ok: true,
        message: `Made ${str(made.name)} (${formatSize(num(made.size) ?? 0)}${files === undefined ? "" : `, ${files} files`}).`,
      });
    } catch (error) {
      const running = error instanceof ApiError && error.code === "backup.running";
      setOutcome({
        ok: false,
        message: running
          ? "A backup is being made already; it is listed here once it is done."
          : describeError(error),
      });
    } finally {
      setCreating(false);
      backups.reload();
    }
  };

  const download = async (backup: Backup) => {
    setBusy(backup.name);
    setOutcome(undefined);
    try {
      saveAs(await apiBlob(backupPath(backup.name)), backup.name);
      setOutcome({ ok: true, message: `Downloaded ${backup.name}.` });
    } catch (error) {
      setOutcome({ ok: false, message: `${backup.name}: ${describeError(error)}` });
    } finally {
      setBusy(undefined);
    }
  };

  const remove = async (backup: Backup) => {
    setBusy(backup.name);
    setOutcome(undefined);
    try {
      await api(backupPath(backup.name), { method: "DELETE" });
      setOutcome({ ok: true, message: `Deleted ${backup.name}.` });
    } catch (error) {
      setOutcome({ ok: false, message: `${backup.name}: ${describeError(error)}` });
    } finally {
      setBusy(undefined);
      backups.reload();
    }
  };

  const list = backups.data ?? [];
  return html`<div class="card backups">
    <div class="title-row">
      <h2>Backups</h2>
      <button type="button" disabled=${creating} onClick=${create}>
        ${creating ? "Making a backup…" : "Create backup"}
      </button>
    </div>
    <p class="muted small">
      An archive holds every secret of the data directory (the admin token, every transcript): keep it as safe as the
      server.
    </p>
    ${creating ? html`<p class="backup-running" role="status"><progress aria-label="Making a backup"></progress> Making a backup…</p>` : null}
    ${
      outcome === undefined
        ? null
        : outcome.ok
          ? html`<p class="ok" role="status">${outcome.message}</p>`
          : html`<p class="error" role="alert">${outcome.message}</p>`
    }
    <${ErrorBox} error=${backups.error} />
    ${
      backups.data === undefined
        ? null
        : list.length === 0
          ? html`<p class="muted">No backups yet.</p>`
          : html`<ul class="backup-list" aria-label="Backups">
              ${list.map(
                (backup) => html`<${BackupRow}
                  key=${backup.name}
                  backup=${backup}
                  busy=${busy === backup.name}
                  onDownload=${() => download(backup)}
                  onDelete=${() => remove(backup)}
                />`,
              )}
            </ul>`
    }
  </div>`;
}
