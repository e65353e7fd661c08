import { html } from "htm/preact";
import type { ChatLine } from "../chat-files.js";
import { formatClock, formatTime, isoTime } from "../read.js";
import { FileView } from "./file-view.js";
import { Markdown } from "./markdown.js";

/** A badge saying a reply was stopped (the chat and the session page show a stopped reply alike). */
export function StoppedBadge() {
  return html`<span class="badge mark stopped-mark" title="The reply was stopped before it was complete"
    >stopped</span
  >`;
}

/** The time a message was said: the time of day (with the date on other days), the full time on hover. */
export function MessageTime(props: { at: number | undefined }) {
  const iso = isoTime(props.at);
  if (iso === undefined) return null;
  return html`<time datetime=${iso} title=${formatTime(props.at)}>${formatClock(props.at)}</time>`;
}

/**
 * One chat bubble: the user's text as typed, a reply as Markdown, then the files sent with it (images drawn,
 * recordings playable, other files to download); under it the time it was said and, for a stopped reply, the
 * stopped badge (the server's `[stopped]` line is left out of the text before this).
 */
export function ChatBubble(props: { line: ChatLine }) {
  const { line } = props;
  if (line.scheduled === true)
    return html`<div class="bubble scheduled" data-role="scheduled">
      <div class="bubble-text">⏰ ${line.text}</div>
      <div class="bubble-meta"><${MessageTime} at=${line.at} /></div>
    </div>`;
  const files = line.files ?? [];
  const text =
    line.role === "assistant" && line.text !== ""
      ? html`<${Markdown} class="bubble-text" text=${line.text} />`
      : line.text === "" && files.length > 0 && !line.streaming
        ? null
        : html`<div class="bubble-text">${line.text || (line.streaming ? "…" : "")}</div>`;
  return html`<div class=${`bubble ${line.role}${line.streaming ? " streaming" : ""}`} data-role=${line.role}>
    ${text}
    ${
      files.length === 0
        ? null
        : html`<div class="bubble-files">
            ${files.map((file, index) => html`<${FileView} key=${file.path ?? `${index}:${file.name}`} file=${file} />`)}
          </div>`
    }
    ${
      line.at !== undefined || line.stopped
        ? html`<div class="bubble-meta">
            <${MessageTime} at=${line.at} />
            ${line.stopped ? html`<${StoppedBadge} />` : null}
          </div>`
        : null
    }
  </div>`;
}
