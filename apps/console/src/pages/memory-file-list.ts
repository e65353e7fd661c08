import { html } from "htm/preact";
import { formatAgo, num, str } from "../read.js";
import { navigate } from "../router.js";
import { ErrorBox, type Loaded } from "../ui.js";

/** The memory files, each a link that opens it in the editor; the open one is marked. */
export function MemoryFileList(props: {
  files: Loaded<Record<string, unknown>[]>;
  selected: string | undefined;
}) {
  const { files } = props;
  return html`
    <aside class="file-list">
      <h2>Files</h2>
      <${ErrorBox} error=${files.error} />
      <ul>
        ${(files.data ?? []).map((file) => {
          const path = str(file.path);
          return html`
            <li>
              <button
                class=${`file${path === props.selected ? " active" : ""}`}
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
  `;
}
