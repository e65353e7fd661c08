import { useState } from "preact/hooks";
import { ApiError, stopReply, streamChat } from "../api.js";
import { type ChatFile, kindOf } from "../chat-files.js";
import { type PendingFiles, readAsDataUrl } from "../components/pending-files.js";
import { webSessionKey } from "../conversations.js";
import { useLiveEvents } from "../live.js";
import { str, withoutStopMark } from "../read.js";
import type { ChatHistory } from "./use-chat-history.js";

/** A `file-sent` live event's file (untrusted JSON). */
function sentFile(data: Record<string, unknown>): ChatFile | undefined {
  const path = str(data.path);
  if (path === "") return undefined;
  const name = str(data.name, path.slice(path.lastIndexOf("/") + 1));
  const caption = str(data.caption).trim();
  return {
    name,
    kind: kindOf(name, str(data.contentType)),
    path,
    ...(caption === "" ? {} : { caption }),
  };
}

/** What {@link useSendMessage} works with. */
export interface SendMessageOptions {
  readonly conversation: string;
  /** Aborts the reply's stream (the chat page was left). */
  readonly signal: AbortSignal;
  readonly history: ChatHistory;
  readonly pending: PendingFiles;
  /** Shows an error, or takes it away (`undefined`). */
  setError(error: unknown): void;
  /** A message was answered. */
  onAnswered(): void;
}

/** The message being written, and sending it: its reply streams into the history until it ends or is stopped. */
export interface SendMessage {
  readonly message: string;
  setMessage(message: string): void;
  /** A message of this view is being answered. */
  readonly sending: boolean;
  readonly stopping: boolean;
  send(): Promise<void>;
  stop(): Promise<void>;
}

/** Sends the composer's message with its files, streams the reply in as it is written, and stops it. */
export function useSendMessage(options: SendMessageOptions): SendMessage {
  const { conversation, history, pending, setError } = options;
  const [message, setMessage] = useState("");
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);

  // A file the assistant sends during this view's reply joins that reply (another tab's shows on reload).
  useLiveEvents((event) => {
    if (event.type !== "file-sent" || str(event.data.sessionKey) !== webSessionKey(conversation)) return;
    if (!sending && !history.sentDuringRun.current) return;
    const file = sentFile(event.data);
    if (file === undefined) return;
    history.replaceLast((line) =>
      line.role === "assistant" ? { ...line, files: [...(line.files ?? []), file] } : line,
    );
  });

  const send = async () => {
    const text = message.trim();
    const attached = pending.files.map((entry) => entry.file);
    if ((text === "" && attached.length === 0) || sending || !history.loaded) return;
    history.sendStarted();
    setMessage("");
    pending.clear();
    setSending(true);
    setError(undefined);
    const shown: ChatFile[] = attached.map((file) => ({
      name: file.name,
      kind: kindOf(file.name, file.type),
      blob: file,
    }));
    history.append([
      { role: "user", text, at: Date.now(), ...(shown.length === 0 ? {} : { files: shown }) },
      { role: "assistant", text: "", streaming: true },
    ]);
    try {
      const attachments = await Promise.all(
        attached.map(async (file) => ({ name: file.name || "file", data: await readAsDataUrl(file) })),
      );
      const done = await streamChat(
        conversation,
        text,
        (delta) =>
          history.replaceLast((line) => ({ ...line, text: line.text + delta, at: line.at ?? Date.now() })),
        options.signal,
        attachments,
      );
      history.replaceLast((line) => ({
        role: "assistant",
        text: done.stopped ? withoutStopMark(done.text || line.text) : done.text,
        at: line.at ?? Date.now(),
        ...(done.stopped ? { stopped: true } : {}),
        ...(line.files === undefined ? {} : { files: line.files }),
      }));
      options.onAnswered();
    } catch (caught) {
      // A stop reported as the turn's error still keeps what was written, as a stopped reply.
      const stopped = caught instanceof ApiError && caught.code === "turn.stopped";
      history.replaceLast((line) => ({ ...line, streaming: false, ...(stopped ? { stopped: true } : {}) }));
      if (!stopped && history.mounted.current) setError(caught);
    } finally {
      history.sendEnded();
      if (history.mounted.current) {
        setSending(false);
        setStopping(false);
      }
    }
  };

  // Stops the reply on the server (the model request included); the stream then ends with what was written.
  const stop = async () => {
    setStopping(true);
    try {
      await stopReply(webSessionKey(conversation));
    } catch (caught) {
      setStopping(false);
      setError(caught);
    }
  };

  return { message, setMessage, sending, stopping, send, stop };
}
