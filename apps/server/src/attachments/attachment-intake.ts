import {
  AttachmentTooLargeError,
  type DownloadedAttachment,
  type DownloadLimits,
  type InboundAttachment,
  type InboundMessage,
  type LinkedSignal,
  type Logger,
  linkAbortSignals,
  silentLogger,
} from "@almanac/core";
import type { Transcriber } from "@almanac/llm";
import { localDateOf, type MemoryScope } from "@almanac/memory-files";
import { detectFileType, isVisibleImage } from "./detect-type.js";
import { inboxFolder, safeFileName } from "./inbox-path.js";
import { InboxStore } from "./inbox-store.js";
import type { ReceivedAttachment, SavedAttachment } from "./received-attachment.js";

/** Downloads one attachment of a message within the limits (a channel adapter's `downloadAttachment`). */
export type AttachmentDownload = (
  attachment: InboundAttachment,
  limits: DownloadLimits,
) => Promise<DownloadedAttachment>;

/** A file that came with the request itself (an API client's data URL, a console upload). */
export interface InlineFile {
  readonly bytes: Uint8Array;
  readonly name?: string;
  readonly contentType?: string;
  /** `image`, `file`, … as the client said; default `file` (the content decides what it is). */
  readonly kind?: string;
}

/** Options of {@link AttachmentIntake}. */
export interface AttachmentIntakeOptions {
  /** The workspace folder the inboxes are in. */
  readonly workspace: string;
  /** Whose part of the workspace a conversation's files go to (the memory scope of its session key). */
  readonly scopeOf: (sessionKey: string) => MemoryScope;
  /** Time zone of the inbox's day folders (the daily logs' zone). */
  readonly timeZone: string;
  /** Largest file taken, in bytes. */
  readonly maxBytes: number;
  /** Longest the downloads of one message may take, and a voice message's transcription, in milliseconds. */
  readonly timeoutMs: number;
  /** The chat model can see: images it can be shown become image parts. */
  readonly vision: boolean;
  /** Speech to text for voice messages; absent, they are saved and the person is told voice is not configured. */
  readonly transcriber?: Transcriber;
  readonly clock?: () => number;
  readonly logger?: Logger;
}

/** Attachments of one message downloaded at once; more wait their turn, within the same deadline. */
const DOWNLOADS_AT_ONCE = 3;

function formatDuration(milliseconds: number): string {
  return milliseconds < 1000 ? `${milliseconds} ms` : `${Math.round(milliseconds / 1000)} s`;
}

/** A file size for people: `20 MB`, `2.5 MB`, `300 KB`. */
function formatMb(bytes: number): string {
  if (bytes < 1_048_576) return `${Math.max(1, Math.round(bytes / 1024))} KB`;
  return `${Number((bytes / 1_048_576).toFixed(1))} MB`;
}

/** What a file is called when its name is missing. */
function fallbackStem(attachment: InboundAttachment): string {
  if (attachment.voice === true) return "voice-message";
  return ["image", "audio", "video", "sticker"].includes(attachment.kind) ? attachment.kind : "file";
}

/** MIME types a transcription endpoint wants named by another extension than the one detected. */
const UPLOAD_EXTENSION: Readonly<Record<string, string>> = { "audio/ogg": "ogg", "audio/x-m4a": "m4a" };

/**
 * Takes what people send besides text, before the turn: each attachment downloaded through its channel (within the
 * size and time limits), checked by content, saved in the conversation scope's inbox folder, a voice message
 * transcribed. What cannot be taken is said, never lost silently, and never stops the rest of the message.
 * Runs outside the session's lane, so a slow download holds up no other conversation.
 */
export class AttachmentIntake {
  readonly #options: AttachmentIntakeOptions;
  readonly #store: InboxStore;
  readonly #logger: Logger;
  readonly #clock: () => number;

  constructor(options: AttachmentIntakeOptions) {
    this.#options = options;
    this.#store = new InboxStore(options.workspace);
    this.#logger = (options.logger ?? silentLogger).child({ component: "attachments" });
    this.#clock = options.clock ?? Date.now;
  }

  /** The largest file taken, in bytes. */
  get maxBytes(): number {
    return this.#options.maxBytes;
  }

  /**
   * Everything a message carries besides its text (its images and attachments), in order. Without `download`
   * (a channel that cannot fetch files) nothing is fetched and each one is described to the model instead.
   */
  async receive(
    inbound: InboundMessage,
    download: AttachmentDownload | undefined,
    signal?: AbortSignal,
  ): Promise<ReceivedAttachment[]> {
    const attachments: InboundAttachment[] = [
      ...(inbound.images ?? []).map((image): InboundAttachment => ({ kind: "image", url: image.url })),
      ...(inbound.attachments ?? []),
    ];
    if (attachments.length === 0) return [];
    if (download === undefined)
      return attachments.map((attachment) => ({ status: "not-downloaded", attachment }));
    const deadline = linkAbortSignals([signal], this.#options.timeoutMs);
    try {
      return await mapAtMost(DOWNLOADS_AT_ONCE, attachments, (attachment) =>
        this.#take(
          inbound.sessionKey,
          attachment,
          async () => {
            if (attachment.size !== undefined && attachment.size > this.#options.maxBytes)
              throw new AttachmentTooLargeError(this.#options.maxBytes, attachment.size);
            return download(attachment, { maxBytes: this.#options.maxBytes, signal: deadline.signal });
          },
          deadline,
        ),
      );
    } finally {
      deadline.dispose();
    }
  }

  /** Files that came with the request (already in memory): checked, saved and transcribed like a channel's. */
  async receiveFiles(
    sessionKey: string,
    files: readonly InlineFile[],
    signal?: AbortSignal,
  ): Promise<ReceivedAttachment[]> {
    const deadline = linkAbortSignals([signal], this.#options.timeoutMs);
    try {
      return await mapAtMost(DOWNLOADS_AT_ONCE, files, (file) =>
        this.#take(
          sessionKey,
          {
            kind: file.kind ?? "file",
            ...(file.name === undefined ? {} : { name: file.name }),
            ...(file.contentType === undefined ? {} : { contentType: file.contentType }),
          },
          async () => ({
            bytes: file.bytes,
            ...(file.name === undefined ? {} : { name: file.name }),
          }),
          deadline,
        ),
      );
    } finally {
      deadline.dispose();
    }
  }

  async #take(
    sessionKey: string,
    attachment: InboundAttachment,
    fetch: () => Promise<DownloadedAttachment>,
    deadline: LinkedSignal,
  ): Promise<ReceivedAttachment> {
    const options = this.#options;
    const kind = attachment.voice === true ? "voice message" : attachment.kind;
    const refused = (problem: string): ReceivedAttachment => ({
      status: "refused",
      kind,
      originalName: attachment.name,
      problem,
    });
    let downloaded: DownloadedAttachment;
    try {
      downloaded = await fetch();
    } catch (error) {
      if (error instanceof AttachmentTooLargeError)
        return refused(
          `it is larger than ${formatMb(error.limitBytes)}${error.sizeBytes === undefined ? "" : ` (${formatMb(error.sizeBytes)})`}`,
        );
      if (deadline.timedOut())
        return refused(`the download took longer than ${formatDuration(options.timeoutMs)}`);
      if (deadline.signal.aborted) return refused("the download was cancelled");
      this.#logger.warn({ err: error, sessionKey, kind }, "an attachment could not be downloaded");
      return refused("the download failed");
    }
    const { bytes } = downloaded;
    if (bytes.length > options.maxBytes)
      return refused(`it is larger than ${formatMb(options.maxBytes)} (${formatMb(bytes.length)})`);
    const check = await detectFileType(bytes);
    if (!check.accepted) {
      this.#logger.info(
        { sessionKey, kind, reason: check.reason },
        "an attachment of a type not accepted was refused",
      );
      return refused(`${check.reason}, so I did not save it`);
    }
    const { type } = check;
    const name = safeFileName(downloaded.name ?? attachment.name, fallbackStem(attachment), type.extension);
    const folder = inboxFolder(options.scopeOf(sessionKey), localDateOf(this.#clock(), options.timeZone));
    let path: string;
    try {
      path = await this.#store.save(folder, name, bytes);
    } catch (error) {
      this.#logger.error({ err: error, sessionKey, folder }, "an attachment could not be saved");
      return refused("it could not be saved on the server");
    }
    this.#logger.info({ sessionKey, path, type: type.mime, bytes: bytes.length }, "attachment saved");
    const saved: SavedAttachment = {
      status: "saved",
      kind:
        attachment.voice === true
          ? kind
          : type.category === "image"
            ? "image"
            : kind === "image"
              ? "file"
              : kind,
      originalName: attachment.name ?? downloaded.name,
      path,
      type,
      size: bytes.length,
      ...(attachment.durationMs === undefined ? {} : { durationMs: attachment.durationMs }),
      shown: options.vision && type.category === "image" && isVisibleImage(type.mime),
    };
    if (attachment.voice !== true) return saved;
    return { ...saved, transcript: await this.#transcribe(sessionKey, bytes, name, type.mime) };
  }

  async #transcribe(
    sessionKey: string,
    bytes: Uint8Array,
    name: string,
    mime: string,
  ): Promise<NonNullable<SavedAttachment["transcript"]>> {
    const transcriber = this.#options.transcriber;
    if (transcriber === undefined) return { problem: "voice is not configured", notConfigured: true };
    const extension = UPLOAD_EXTENSION[mime];
    const uploadName = extension === undefined ? name : name.replace(/(\.[^.]*)?$/, `.${extension}`);
    // Its own time limit: a long recording on a local whisper server may take a while after a quick download.
    const timer = linkAbortSignals([], this.#options.timeoutMs);
    try {
      const text = await transcriber.transcribe(
        { bytes, name: uploadName, contentType: mime },
        { signal: timer.signal },
      );
      return text === "" ? { problem: "nothing was heard in it" } : { text };
    } catch (error) {
      this.#logger.warn({ err: error, sessionKey }, "a voice message could not be transcribed");
      return {
        problem: timer.timedOut()
          ? `the transcription took longer than ${formatDuration(this.#options.timeoutMs)}`
          : "the transcription service failed",
      };
    } finally {
      timer.dispose();
    }
  }
}

/** `map` with at most `limit` calls running at once; results in input order. */
async function mapAtMost<T, R>(
  limit: number,
  items: readonly T[],
  map: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next;
      next += 1;
      results[index] = await map(items[index] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
