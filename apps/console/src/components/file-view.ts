import { html } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { apiBlob, workspaceFilePath } from "../api.js";
import type { ChatFile } from "../chat-files.js";
import "./chat-files.css";

/** The file's bytes: the page's own, or fetched with the token (a link would need the token in the URL). */
function bytesOf(file: ChatFile): Promise<Blob> {
  if (file.blob !== undefined) return Promise.resolve(file.blob);
  if (file.path === undefined) return Promise.reject(new Error("no path"));
  return apiBlob(workspaceFilePath(file.path));
}

/** A `blob:` URL of the file while the component is shown (revoked after), or the failure. */
function useObjectUrl(file: ChatFile): { url?: string; failed: boolean } {
  const [state, setState] = useState<{ url?: string; failed: boolean }>({ failed: false });
  useEffect(() => {
    let url: string | undefined;
    let current = true;
    bytesOf(file).then(
      (blob) => {
        if (!current) return;
        url = URL.createObjectURL(blob);
        setState({ url, failed: false });
      },
      () => current && setState({ failed: true }),
    );
    return () => {
      current = false;
      if (url !== undefined) URL.revokeObjectURL(url);
    };
  }, [file.path, file.blob]);
  return state;
}

/** Saves the file under its name: fetched when asked for (a large document is not loaded with the chat). */
async function download(file: ChatFile): Promise<void> {
  const url = URL.createObjectURL(await bytesOf(file));
  const link = document.createElement("a");
  link.href = url;
  link.download = file.name;
  link.click();
  // The browser has started the download by the time the next task runs.
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function ShownFile(props: { file: ChatFile }) {
  const { file } = props;
  const { url, failed } = useObjectUrl(file);
  if (failed) return html`<span class="file-missing" role="note">${file.name} could not be loaded</span>`;
  if (url === undefined) return html`<span class="muted small">Loading ${file.name}…</span>`;
  return file.kind === "image"
    ? html`<img class="chat-image" src=${url} alt=${file.name} title=${file.name} />`
    : html`<audio class="chat-audio" controls preload="metadata" src=${url} aria-label=${file.name}></audio>`;
}

/**
 * One file in a chat bubble: an image drawn, a recording with a player, any other file as a button that downloads
 * it; its caption under it. Every byte comes through the API with the token, as a `blob:` URL: nothing is
 * hot-linked, and the console's Content-Security-Policy allows `blob:` for images and media only.
 */
export function FileView(props: { file: ChatFile }) {
  const { file } = props;
  const [error, setError] = useState(false);
  const shown =
    file.kind === "file"
      ? html`<button
          type="button"
          class="secondary file-download"
          title="Download"
          onClick=${() =>
            download(file).then(
              () => setError(false),
              () => setError(true),
            )}
        >
          ${file.name}
        </button>
        ${error ? html`<span class="file-missing" role="note">could not be downloaded</span>` : null}`
      : html`<${ShownFile} file=${file} />`;
  return html`<figure class=${`chat-file ${file.kind}`} data-name=${file.name}>
    ${shown}
    ${file.caption === undefined ? null : html`<figcaption>${file.caption}</figcaption>`}
  </figure>`;
}
