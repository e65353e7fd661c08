import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { ConsolidationCard } from "../components/memory-care-consolidation.js";
import { ForgetCard } from "../components/memory-care-forget.js";
import { asArray, asRecord, str } from "../read.js";
import { navigate } from "../router.js";
import { useLoad } from "../ui.js";
import { type LineRange, MemoryFileEditor } from "./memory-file-editor.js";
import { MemoryFileList } from "./memory-file-list.js";
import { MemorySearch, type SearchHit } from "./memory-search.js";
import { useMemoryFile } from "./use-memory-file.js";

/**
 * The memory files: list, open, edit and save (optimistic via the file's hash), and search; forget a fact, and
 * consolidation's state with Consolidate now.
 */
export function MemoryPage(props: { file?: string }) {
  const files = useLoad(
    async () => asArray(asRecord(await api("/api/memory/files")).files).map(asRecord),
    "files",
  );
  const [highlight, setHighlight] = useState<LineRange>();
  const first = files.data ? str(files.data[0]?.path, "MEMORY.md") : undefined;
  const selected = props.file ?? first;
  const file = useMemoryFile(selected, files.reload);

  const openHit = (hit: SearchHit) => {
    setHighlight({ start: hit.startLine, end: hit.endLine });
    navigate(`/memory?file=${encodeURIComponent(hit.path)}`);
  };

  const filesChanged = () => {
    files.reload();
    file.changedOnDisk();
  };
  return html`
    <section class="memory">
      <h1>Memory</h1>
      <${MemorySearch} onOpen=${openHit} />
      <div class="memory-grid">
        <${MemoryFileList} files=${files} selected=${selected} />
        <${MemoryFileEditor}
          file=${file}
          selected=${selected}
          highlight=${highlight}
          onHighlighted=${() => setHighlight(undefined)}
        />
      </div>
      <div class="memory-care">
        <${ForgetCard} onForgot=${filesChanged} />
        <${ConsolidationCard} onFinished=${filesChanged} />
      </div>
    </section>
  `;
}
