import { html } from "htm/preact";
import { asRecord, formatTime } from "../read.js";

/** Words a label spells in capitals. */
const ACRONYMS: Record<string, string> = {
  url: "URL",
  api: "API",
  id: "ID",
  dm: "DM",
  ui: "UI",
  http: "HTTP",
};

/** The unit a key's suffix names, shown in the value instead of the label (`turnTimeoutMs` → "Turn timeout"). */
const UNIT_SUFFIX = /(Ms|Bytes)$/;

/** A JSON key as a label: `maxMessageChars` → "Max message chars", `baseUrl` → "Base URL". */
export function humanLabel(key: string): string {
  const words = key
    .replace(UNIT_SUFFIX, (suffix, _unit, offset: number) => (offset === 0 ? suffix : ""))
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/[_-]+/g, " ")
    .trim()
    .split(/\s+/)
    .map((word) => ACRONYMS[word.toLowerCase()] ?? word.toLowerCase());
  const sentence = words.join(" ");
  return sentence.charAt(0).toUpperCase() + sentence.slice(1);
}

/** Milliseconds in the largest unit that reads well: 900000 → "15 min". */
function formatDuration(ms: number): string {
  if (ms === 0) return "0";
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms.toLocaleString()} ms`;
}

/** Bytes as KiB/MiB/GiB when they divide evenly enough to read: 1048576 → "1 MiB". */
function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number.isInteger(value) ? value : value.toFixed(1)} ${units[unit]}`;
}

/** Timestamps in milliseconds look like this (after 2001): keys ending in `At` holding one are shown as dates. */
const EPOCH_MS_FLOOR = 1_000_000_000_000;

/** One scalar value (or a list of them) in words: yes/no, durations, sizes, times, "none" for empty. */
export function formatValue(key: string, value: unknown): string {
  if (value === null || value === undefined || value === "") return "—";
  if (typeof value === "boolean") return value ? "yes" : "no";
  if (typeof value === "number") {
    if (key.endsWith("Ms")) return formatDuration(value);
    if (key.endsWith("Bytes")) return formatBytes(value);
    if (/(At|^at)$/.test(key) && value > EPOCH_MS_FLOOR) return formatTime(value);
    return value.toLocaleString();
  }
  if (Array.isArray(value))
    return value.length === 0 ? "none" : value.map((item) => formatValue(key, item)).join(", ");
  if (typeof value === "object") return Object.keys(value).length === 0 ? "none" : "…";
  return String(value);
}

/** One leaf of a nested record: the keys that lead to it and its value. */
interface Fact {
  readonly path: readonly string[];
  readonly value: unknown;
}

function isScalarList(value: unknown): boolean {
  return Array.isArray(value) && value.every((item) => typeof item !== "object" || item === null);
}

/** Every leaf of `record` (scalars, lists of scalars, empty objects), depth first, in key order. */
function leaves(record: Record<string, unknown>, path: readonly string[] = []): Fact[] {
  return Object.entries(record).flatMap(([key, value]): Fact[] => {
    const here = [...path, key];
    if (Array.isArray(value) && !isScalarList(value))
      return value.flatMap((item, index) => leaves(asRecord(item), [...here, String(index + 1)]));
    if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0)
      return leaves(value as Record<string, unknown>, here);
    return [{ path: here, value }];
  });
}

/**
 * A nested record (configuration, an index status) as a list of labelled values: nested keys joined with
 * "›", each value in words (see {@link formatValue}); the raw key path is the row's tooltip.
 */
export function FactList(props: { record: Record<string, unknown> }) {
  return html`<dl class="facts tree">
    ${leaves(props.record).map(
      (fact) => html`<dt title=${fact.path.join(".")}>${fact.path.map(humanLabel).join(" › ")}</dt>
        <dd>${formatValue(fact.path.at(-1) ?? "", fact.value)}</dd>`,
    )}
  </dl>`;
}
