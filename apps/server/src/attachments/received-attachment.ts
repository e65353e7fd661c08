import type { InboundAttachment } from "@almanac/core";
import type { DetectedType } from "./detect-type.js";

/** A file saved in the conversation's inbox. */
export interface SavedAttachment {
  readonly status: "saved";
  /** What it is, in words: `image`, `file`, `audio`, `video`, `sticker`, `voice message`. */
  readonly kind: string;
  /** The name the person's app gave it, when there was one. */
  readonly originalName: string | undefined;
  /** Workspace-relative path, `/`-separated, e.g. `inbox/2026-12-06/photo.jpg`. */
  readonly path: string;
  /** The type read from the content. */
  readonly type: DetectedType;
  readonly size: number;
  readonly durationMs?: number;
  /** True when the model gets it as an image part (a vision model, an image it can be shown). */
  readonly shown: boolean;
  /** A voice message's transcript, or why it has none. */
  readonly transcript?:
    | { readonly text: string }
    | { readonly problem: string; readonly notConfigured?: boolean };
}

/** A file that was not saved (too large, too slow, failed, of a type not accepted): the person is told why. */
export interface RefusedAttachment {
  readonly status: "refused";
  readonly kind: string;
  readonly originalName: string | undefined;
  /** Why, in words for the person and the model: "it is larger than 20 MB (30.0 MB)". */
  readonly problem: string;
}

/** An attachment of a channel that cannot download files: the model gets its description and link. */
export interface UnfetchedAttachment {
  readonly status: "not-downloaded";
  readonly attachment: InboundAttachment;
}

/** What became of one attachment of a message before its turn. */
export type ReceivedAttachment = SavedAttachment | RefusedAttachment | UnfetchedAttachment;

function quoted(name: string | undefined): string {
  return name === undefined ? "" : ` "${name}"`;
}

/**
 * The lines the person reads above the reply about their attachments: each file not taken and why, and a voice
 * message that could not be transcribed. Empty when everything was taken.
 */
export function attachmentNotices(received: readonly ReceivedAttachment[]): string[] {
  const notices: string[] = [];
  for (const item of received) {
    if (item.status === "refused")
      notices.push(`I could not take the ${item.kind}${quoted(item.originalName)}: ${item.problem}.`);
    if (item.status === "saved" && item.transcript !== undefined && "problem" in item.transcript)
      notices.push(
        item.transcript.notConfigured === true
          ? "Voice messages cannot be transcribed here: no transcription service is configured. I kept the recording; please send your message as text."
          : `I could not transcribe the voice message: ${item.transcript.problem}. I kept the recording; please send your message as text.`,
      );
  }
  return notices;
}

/**
 * {@link attachmentNotices} as the text put above a reply: each line in italics (like the compaction notice), then
 * a blank line; empty when there is nothing to say.
 */
export function attachmentNoticeText(received: readonly ReceivedAttachment[] | undefined): string {
  const notices = attachmentNotices(received ?? []);
  return notices.length === 0 ? "" : `${notices.map((notice) => `_${notice}_`).join("\n")}\n\n`;
}
