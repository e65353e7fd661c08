import { html } from "htm/preact";
import { useRef, useState } from "preact/hooks";
import "./chat-files.css";

/** Files one console message may carry (the server's limit for `POST /api/console/chat`). */
const MAX_FILES_PER_MESSAGE = 10;

/** A file attached to the message being written, not sent yet. */
export interface PendingFile {
  readonly id: number;
  readonly file: File;
}

/** The files attached to the message being written: added by pasting, dropping or the file picker. */
export interface PendingFiles {
  readonly files: readonly PendingFile[];
  /** Adds files; returns what to tell the person when some were not taken (too many). */
  add(files: readonly File[]): string | undefined;
  remove(id: number): void;
  clear(): void;
}

/** The composer's attached files, for one conversation view. */
export function usePendingFiles(): PendingFiles {
  const [files, setFiles] = useState<readonly PendingFile[]>([]);
  const nextId = useRef(1);
  return {
    files,
    add(list) {
      const room = MAX_FILES_PER_MESSAGE - files.length;
      const taken = list.slice(0, Math.max(0, room));
      if (taken.length > 0)
        setFiles((previous) => [
          ...previous,
          ...taken.map((file) => {
            nextId.current += 1;
            return { id: nextId.current, file };
          }),
        ]);
      return taken.length < list.length
        ? `A message can carry at most ${MAX_FILES_PER_MESSAGE} files.`
        : undefined;
    },
    remove(id) {
      setFiles((previous) => previous.filter((pending) => pending.id !== id));
    },
    clear() {
      setFiles([]);
    },
  };
}

/** A file's bytes as a base64 `data:` URL, the form `POST /api/console/chat` takes them in. */
export function readAsDataUrl(file: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("The file could not be read."));
    reader.readAsDataURL(file);
  });
}

function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1_048_576) return `${Math.round(bytes / 1024)} KB`;
  return `${(bytes / 1_048_576).toFixed(1)} MB`;
}

/** The attached files as chips, each with its size and a button that takes it off the message. */
export function PendingFileChips(props: { files: readonly PendingFile[]; onRemove(id: number): void }) {
  if (props.files.length === 0) return null;
  return html`<ul class="pending-files" aria-label="Files to send">
    ${props.files.map(
      ({ id, file }) => html`<li class="pending-file" key=${id}>
        <span class="file-name" title=${file.name}>${file.name || "file"}</span>
        <span class="muted small">${formatSize(file.size)}</span>
        <button
          type="button"
          class="secondary"
          aria-label=${`Remove ${file.name || "file"}`}
          onClick=${() => props.onRemove(id)}
        >
          ×
        </button>
      </li>`,
    )}
  </ul>`;
}
