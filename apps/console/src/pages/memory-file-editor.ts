import { html } from "htm/preact";
import { useEffect, useRef } from "preact/hooks";
import { ErrorBox } from "../ui.js";
import type { MemoryFile } from "./use-memory-file.js";

/** Lines of a file to select once it is open (a search hit's). */
export interface LineRange {
  readonly start: number;
  readonly end: number;
}

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

/** What {@link MemoryFileEditor} edits and which lines it selects. */
export interface MemoryFileEditorProps {
  readonly file: MemoryFile;
  /** The file asked for; undefined until the file list tells which one opens first. */
  readonly selected: string | undefined;
  /** Lines to select once `selected` is open. */
  readonly highlight: LineRange | undefined;
  /** The highlight was applied. */
  onHighlighted(): void;
}

/** The open memory file's text with Save, and what became of the save (saved, a conflict, a refused shrink). */
export function MemoryFileEditor(props: MemoryFileEditorProps) {
  const { file, selected, highlight } = props;
  const { open, dirty, save } = file;
  const editorRef = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    if (highlight && editorRef.current && open?.path === selected) {
      selectLines(editorRef.current, highlight.start, highlight.end);
      props.onHighlighted();
    }
  }, [highlight, open, selected]);

  return html`
    <div class="editor">
      <${ErrorBox} error=${file.loadError} />
      ${
        open
          ? html`
            <div class="editor-head">
              <h2 class="file-path">
                ${open.path}${dirty ? " •" : ""}
                ${open.hash === null ? html` <span class="badge">new</span>` : null}
              </h2>
              <button onClick=${() => file.write(false)} disabled=${!dirty || save.kind === "saving"}>
                ${save.kind === "saving" ? "Saving…" : "Save"}
              </button>
            </div>
            <textarea
              ref=${editorRef}
              class="editor-text"
              aria-label="File content"
              spellcheck="false"
              value=${file.text}
              onInput=${(event: Event) => file.setText((event.currentTarget as HTMLTextAreaElement).value)}
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
                  <button class="secondary" onClick=${file.reloadFromDisk}>Reload from disk</button>
                </div>`
                : null
            }
            ${
              save.kind === "shrink"
                ? html`<div class="error" role="alert">
                  <p><strong>Refused:</strong> this save would remove most of the file. If that is what you
                  mean, save anyway (the previous version is backed up).</p>
                  <button class="danger" onClick=${() => file.write(true)}>Save anyway</button>
                </div>`
                : null
            }
            ${save.kind === "failed" ? html`<${ErrorBox} error=${save.error} />` : null}
          `
          : selected === undefined || file.loadError !== undefined
            ? null
            : html`<p class="muted">Loading…</p>`
      }
    </div>
  `;
}
