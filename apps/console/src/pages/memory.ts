import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, memoryFilePath } from "../api.js";
import { ConsolidationCard } from "../components/memory-care-consolidation.js";
import { ForgetCard } from "../components/memory-care-forget.js";
import { asArray, asRecord, formatAgo, num, str } from "../read.js";
import { navigate } from "../router.js";
import { ErrorBox, useLoad } from "../ui.js";
import { MemorySearch, type SearchHit } from "./memory-search.js";

interface OpenFile {
  readonly path: string;
  /** `null` for a file that does not exist yet (saving creates it). */
  readonly hash: string | null;
  readonly saved: string;
}

type SaveState =
  | { readonly kind: "idle" }
  | { readonly kind: "saving" }
  | { readonly kind: "saved"; readonly changed: boolean; readonly backupPath: string }
  | { readonly kind: "conflict" | "shrink" | "failed"; readonly error: unknown };

/** Selects lines `start`–`end` (1-based) of a textarea and scrolls them into view. */
function selectLines(textarea: HTMLTextAreaElement, start: number, end: number): void {
  const lines = textarea.value.split("\n");
  const from = lines.slice(0, start - 1).reduce((sum, line) => sum + line.length + 1, 0);
  const to = lines.slice(0, end).reduce((sum, line) => sum + line.length + 1, 0) - 1;
  textarea.focus();
  textarea.setSelectionRange(from, Math.max(from, to));
  const lineHeight = Number.parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (start - 3) * lineHeight);
}

/**
 * The memory files: list, open, edit and save (optimistic via the file's hash), and search; forget a fact, and
 * consolidation's state with Consolidate now.
 */
export function MemoryPage(props: { file?: string }) {
  const files = useLoad(
    async () => asArray(asRecord(await api("/api/memory/files")).files).map(asRecord),
    "files",
  );
  const [open, setOpen] = useState<OpenFile>();
  const [text, setText] = useState("");
  const [loadError, setLoadError] = useState<unknown>();
  const [save, setSave] = useState<SaveState>({ kind: "idle" });
  const [highlight, setHighlight] = useState<{ start: number; end: number }>();
  // Bumped when the files changed on disk (a forget, a consolidation): the open file is read again.
  const [revision, setRevision] = useState(0);
  const editorRef = useRef<HTMLTextAreaElement>(null);
  const first = files.data ? str(files.data[0]?.path, "MEMORY.md") : undefined;
  const selected = props.file ?? first;

  useEffect(() => {
    if (selected === undefined) return;
    let current = true;
    setLoadError(undefined);
    setSave({ kind: "idle" });
    // The file comes from the URL (`?file=`), so from any link: a path that would leave the memory API is
    // refused here, before any request, and nothing of the previous file stays on screen.
    let url: string;
    try {
      url = memoryFilePath(selected);
    } catch (error) {
      setOpen(undefined);
      setLoadError(error);
      return;
    }
    api(url).then(
      (body) => {
        if (!current) return;
        const file = asRecord(body);
        setOpen({ path: str(file.path, selected), hash: str(file.hash), saved: str(file.content) });
        setText(str(file.content));
      },
      (error: unknown) => {
        if (!current) return;
        // A missing file opens empty; saving creates it (expectedHash null: "must not exist yet").
        if (error instanceof ApiError && error.code === "memory.not_found") {
          setOpen({ path: selected, hash: null, saved: "" });
          setText("");
        } else {
          setOpen(undefined);
          setLoadError(error);
        }
      },
    );
    return () => {
      current = false;
    };
  }, [selected, revision]);

  useEffect(() => {
    if (highlight && editorRef.current && open?.path === selected) {
      selectLines(editorRef.current, highlight.start, highlight.end);
      setHighlight(undefined);
    }
  }, [highlight, open, selected]);

  const write = async (allowShrink: boolean) => {
    if (!open) return;
    setSave({ kind: "saving" });
    try {
      const body = asRecord(
        await api(memoryFilePath(open.path), {
          method: "PUT",
          body: { content: text, expectedHash: open.hash, ...(allowShrink ? { allowShrink: true } : {}) },
        }),
      );
      setOpen({ path: open.path, hash: str(body.hash), saved: text });
      setSave({ kind: "saved", changed: body.changed === true, backupPath: str(body.backupPath) });
      files.reload();
    } catch (error) {
      const code = error instanceof ApiError ? error.code : "";
      const kind =
        code === "memory.conflict" ? "conflict" : code === "memory.shrink_refused" ? "shrink" : "failed";
      setSave({ kind, error });
    }
  };

  const reloadFromDisk = async () => {
    if (!open) return;
    const file = asRecord(await api(memoryFilePath(open.path)));
    setOpen({ path: open.path, hash: str(file.hash), saved: str(file.content) });
    setText(str(file.content));
    setSave({ kind: "idle" });
  };

  const openHit = (hit: SearchHit) => {
    setHighlight({ start: hit.startLine, end: hit.endLine });
    navigate(`/memory?file=${encodeURIComponent(hit.path)}`);
  };

  const dirty = open !== undefined && text !== open.saved;
  // Unsaved edits stay on screen: saving them then meets the changed file as a conflict, and says so.
  const filesChanged = () => {
    files.reload();
    if (!dirty) setRevision((value) => value + 1);
  };
  return html`
    <section class="memory">
      <h1>Memory</h1>
      <${MemorySearch} onOpen=${openHit} />
      <div class="memory-grid">
        <aside class="file-list">
          <h2>Files</h2>
          <${ErrorBox} error=${files.error} />
          <ul>
            ${(files.data ?? []).map((file) => {
              const path = str(file.path);
              return html`
                <li>
                  <button
                    class=${`file${path === selected ? " active" : ""}`}
                    onClick=${() => navigate(`/memory?file=${encodeURIComponent(path)}`)}
                  >
                    <span class="file-path">${path}</span>
                    <span class="muted small">${num(file.size) ?? 0} B · ${formatAgo(file.mtimeMs)}</span>
                  </button>
                </li>
              `;
            })}
          </ul>
          ${files.data?.length === 0 ? html`<p class="muted">No memory files yet.</p>` : null}
        </aside>
        <div class="editor">
          <${ErrorBox} error=${loadError} />
          ${
            open
              ? html`
                <div class="editor-head">
                  <h2 class="file-path">
                    ${open.path}${dirty ? " •" : ""}
                    ${open.hash === null ? html` <span class="badge">new</span>` : null}
                  </h2>
                  <button onClick=${() => write(false)} disabled=${!dirty || save.kind === "saving"}>
                    ${save.kind === "saving" ? "Saving…" : "Save"}
                  </button>
                </div>
                <textarea
                  ref=${editorRef}
                  class="editor-text"
                  aria-label="File content"
                  spellcheck="false"
                  value=${text}
                  onInput=${(event: Event) => setText((event.currentTarget as HTMLTextAreaElement).value)}
                ></textarea>
                ${
                  save.kind === "saved"
                    ? html`<p class="ok" role="status">
                      ${save.changed ? "Saved." : "No change to save."}
                      ${save.backupPath ? html` Previous version backed up to <code>${save.backupPath}</code>.` : null}
                    </p>`
                    : null
                }
                ${
                  save.kind === "conflict"
                    ? html`<div class="error" role="alert">
                      <p><strong>Conflict:</strong> the file changed on disk since you opened it (the summarizer or
                      another editor wrote it). Your text is still here; copy what you need, then reload.</p>
                      <button class="secondary" onClick=${reloadFromDisk}>Reload from disk</button>
                    </div>`
                    : null
                }
                ${
                  save.kind === "shrink"
                    ? html`<div class="error" role="alert">
                      <p><strong>Refused:</strong> this save would remove most of the file. If that is what you
                      mean, save anyway (the previous version is backed up).</p>
                      <button class="danger" onClick=${() => write(true)}>Save anyway</button>
                    </div>`
                    : null
                }
                ${save.kind === "failed" ? html`<${ErrorBox} error=${save.error} />` : null}
              `
              : selected === undefined || loadError !== undefined
                ? null
                : html`<p class="muted">Loading…</p>`
          }
        </div>
      </div>
      <div class="memory-care">
        <${ForgetCard} onForgot=${filesChanged} />
        <${ConsolidationCard} onFinished=${filesChanged} />
      </div>
    </section>
  `;
}
