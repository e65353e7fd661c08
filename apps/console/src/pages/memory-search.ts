import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, api } from "../api.js";
import { asArray, asRecord, num, str } from "../read.js";
import { ErrorBox } from "../ui.js";

/** One search hit: where it is and the matching text. */
export interface SearchHit {
  readonly path: string;
  readonly startLine: number;
  readonly endLine: number;
  readonly score: number | undefined;
  readonly snippet: string;
  readonly source: string;
  /** The log's day, or the file's last change (`YYYY-MM-DD`): the newest of two statements shows. */
  readonly date: string;
}

interface SearchState {
  readonly query: string;
  readonly mode: string;
  readonly note: string;
  readonly hits: readonly SearchHit[];
}

/** The search box over the memory files (`GET /api/memory/search`); a hit opens its file at its lines. */
export function MemorySearch(props: { onOpen: (hit: SearchHit) => void }) {
  const [query, setQuery] = useState("");
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<SearchState>();
  const [error, setError] = useState<unknown>();

  const search = async (event: Event) => {
    event.preventDefault();
    const q = query.trim();
    if (q === "") return;
    setBusy(true);
    setError(undefined);
    try {
      const body = asRecord(await api(`/api/memory/search?q=${encodeURIComponent(q)}&maxResults=10`));
      setResult({
        query: q,
        mode: str(body.mode),
        note: str(body.note),
        hits: asArray(body.results)
          .map(asRecord)
          .map((hit) => ({
            path: str(hit.path),
            startLine: num(hit.startLine) ?? 1,
            endLine: num(hit.endLine) ?? num(hit.startLine) ?? 1,
            score: num(hit.score),
            snippet: str(hit.snippet),
            source: str(hit.source),
            date: str(hit.date),
          })),
      });
    } catch (caught) {
      setResult(undefined);
      setError(
        caught instanceof ApiError && caught.status === 404 && caught.code === "route.not_found"
          ? new Error("Search is not available on this server version.")
          : caught,
      );
    } finally {
      setBusy(false);
    }
  };

  return html`
    <div class="memory-search">
      <form class="search-bar" role="search" onSubmit=${search}>
        <input
          type="search"
          name="q"
          aria-label="Search memory"
          placeholder="Search memory…"
          value=${query}
          onInput=${(event: Event) => setQuery((event.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" disabled=${busy || query.trim() === ""}>${busy ? "Searching…" : "Search"}</button>
      </form>
      <${ErrorBox} error=${error} />
      ${
        result
          ? html`
            <div class="search-results">
              <p class="muted small">
                ${result.hits.length} result${result.hits.length === 1 ? "" : "s"} for “${result.query}”
                ${result.mode ? html` · <span class="badge">${result.mode}</span>` : null}
                ${result.note ? html` · ${result.note}` : null}
              </p>
              <ul class="hits">
                ${result.hits.map(
                  (hit) => html`
                    <li>
                      <button class="hit" onClick=${() => props.onOpen(hit)}>
                        <span class="hit-where">
                          ${hit.path}:${hit.startLine}${hit.endLine === hit.startLine ? "" : `–${hit.endLine}`}
                        </span>
                        ${hit.date === "" ? null : html`<span class="muted small">${hit.date}</span>`}
                        ${hit.score === undefined ? null : html`<span class="muted small">${hit.score.toFixed(3)}</span>`}
                        <span class="hit-snippet">${hit.snippet}</span>
                      </button>
                    </li>
                  `,
                )}
              </ul>
            </div>
          `
          : null
      }
    </div>
  `;
}
