import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, sessionPath, stopReply, streamChat } from "../api.js";
import { type ChatFile, type ChatLine, chatLinesOf, kindOf } from "../chat-files.js";
import { ChatBubble } from "../components/chat-bubble.js";
import { PendingFileChips, readAsDataUrl, usePendingFiles } from "../components/pending-files.js";
import { webSessionKey } from "../conversations.js";
import { useLiveEvents } from "../live.js";
import { asArray, asRecord, str, withoutStopMark } from "../read.js";
import { ErrorBox } from "../ui.js";

/** A conversation's messages as the chat shows them; none for a conversation the server does not have yet. */
async function loadHistory(conversation: string): Promise<ChatLine[]> {
  try {
    const detail = asRecord(await api(sessionPath(webSessionKey(conversation))));
    return chatLinesOf(asArray(detail.messages));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}

/** What {@link ChatView} needs from the page around it. */
export interface ChatViewProps {
  readonly conversation: string;
  /** The conversation's title, or what stands for it. */
  readonly title: string;
  /** A reply of this conversation is being written (by this view, another tab, or before this view opened). */
  readonly running: boolean;
  /** Changes each time a scheduled task's reply is delivered into this conversation: its history is read again. */
  readonly deliveries: number;
  /** Aborts the streams of the whole chat page (when it is left); switching conversations leaves them running. */
  readonly signal: AbortSignal;
  /** A message was answered (the conversation list refreshes). */
  onAnswered(): void;
  /** Opens the conversation list (a drawer on a phone). */
  onOpenList(): void;
  readonly listOpen: boolean;
}

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

/** True when a drag carries files (not text or a link dragged inside the page). */
function carriesFiles(event: DragEvent): boolean {
  return event.dataTransfer?.types.includes("Files") ?? false;
}

/**
 * One conversation: its history, the composer (files pasted, dropped or picked go with the message), the reply
 * streaming in as it is written with the files the assistant sends, Stop. Made for one conversation (the page keys
 * it by the id), so nothing of another conversation's reply can land in it.
 */
export function ChatView(props: ChatViewProps) {
  const { conversation } = props;
  const [lines, setLines] = useState<ChatLine[]>([]);
  // Until the history is on screen the composer is disabled: a message sent earlier would be wiped from view
  // when the history arrives.
  const [loaded, setLoaded] = useState(false);
  const [historyGeneration, setHistoryGeneration] = useState(0);
  const [message, setMessage] = useState("");
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [error, setError] = useState<unknown>();
  const logRef = useRef<HTMLDivElement>(null);
  const mounted = useRef(true);
  /** Messages this view sent; a history load that started before one ends without effect. */
  const sends = useRef(0);
  /** This view sent a message while the current run lasted: its reply is on screen already. */
  const sentDuringRun = useRef(false);
  const wasRunning = useRef(props.running);
  const pending = usePendingFiles();
  const [dragging, setDragging] = useState(false);
  const fileInput = useRef<HTMLInputElement>(null);

  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );

  useEffect(() => {
    let current = true;
    const sendsAtStart = sends.current;
    loadHistory(conversation).then(
      (history) => {
        if (!current || sends.current !== sendsAtStart) return;
        setLines(history);
        setLoaded(true);
      },
      (caught: unknown) => {
        if (!current) return;
        setError(caught);
        setLoaded(true);
      },
    );
    return () => {
      current = false;
    };
  }, [conversation, historyGeneration, props.deliveries]);

  // A reply this view did not send (another tab's, or one still running when the view opened) is read from
  // the history once it ends.
  useEffect(() => {
    if (wasRunning.current && !props.running) {
      if (!sentDuringRun.current) setHistoryGeneration((generation) => generation + 1);
      sentDuringRun.current = false;
    }
    wasRunning.current = props.running;
  }, [props.running]);

  useEffect(() => {
    const log = logRef.current;
    if (log) log.scrollTop = log.scrollHeight;
  }, [lines]);

  const replaceLast = (update: (line: ChatLine) => ChatLine) => {
    if (!mounted.current) return;
    setLines((previous) => {
      const last = previous.at(-1);
      return last ? [...previous.slice(0, -1), update(last)] : previous;
    });
  };

  // A file the assistant sends during this view's reply joins that reply (another tab's shows on reload).
  useLiveEvents((event) => {
    if (event.type !== "file-sent" || str(event.data.sessionKey) !== webSessionKey(conversation)) return;
    if (!sending && !sentDuringRun.current) return;
    const file = sentFile(event.data);
    if (file === undefined) return;
    replaceLast((line) =>
      line.role === "assistant" ? { ...line, files: [...(line.files ?? []), file] } : line,
    );
  });

  const attach = (files: readonly File[]) => {
    const problem = pending.add(files);
    setError(problem === undefined ? undefined : new Error(problem));
  };

  const send = async () => {
    const text = message.trim();
    const attached = pending.files.map((entry) => entry.file);
    if ((text === "" && attached.length === 0) || sending || !loaded) return;
    sends.current += 1;
    sentDuringRun.current = true;
    setMessage("");
    pending.clear();
    setSending(true);
    setError(undefined);
    const shown: ChatFile[] = attached.map((file) => ({
      name: file.name,
      kind: kindOf(file.name, file.type),
      blob: file,
    }));
    setLines((previous) => [
      ...previous,
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
        (delta) => replaceLast((line) => ({ ...line, text: line.text + delta, at: line.at ?? Date.now() })),
        props.signal,
        attachments,
      );
      replaceLast((line) => ({
        role: "assistant",
        text: done.stopped ? withoutStopMark(done.text || line.text) : done.text,
        at: line.at ?? Date.now(),
        ...(done.stopped ? { stopped: true } : {}),
        ...(line.files === undefined ? {} : { files: line.files }),
      }));
      props.onAnswered();
    } catch (caught) {
      // A stop reported as the turn's error still keeps what was written, as a stopped reply.
      const stopped = caught instanceof ApiError && caught.code === "turn.stopped";
      replaceLast((line) => ({ ...line, streaming: false, ...(stopped ? { stopped: true } : {}) }));
      if (!stopped && mounted.current) setError(caught);
    } finally {
      // With the run's end already seen (or no live events to see it), nothing is left to wait for.
      if (!wasRunning.current) sentDuringRun.current = false;
      if (mounted.current) {
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

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  const elsewhere = props.running && !sending && !sentDuringRun.current;
  return html`
    <section
      class=${`chat${dragging ? " dragging" : ""}`}
      aria-label="Conversation"
      onDragOver=${(event: DragEvent) => {
        if (!carriesFiles(event) || !loaded) return;
        event.preventDefault();
        setDragging(true);
      }}
      onDragLeave=${(event: DragEvent) => {
        const to = event.relatedTarget;
        if (!(to instanceof Node) || !(event.currentTarget as HTMLElement).contains(to)) setDragging(false);
      }}
      onDrop=${(event: DragEvent) => {
        if (!carriesFiles(event)) return;
        event.preventDefault();
        setDragging(false);
        if (loaded) attach(Array.from(event.dataTransfer?.files ?? []));
      }}
    >
      <div class="chat-head">
        <button
          type="button"
          class="secondary drawer-toggle"
          aria-expanded=${props.listOpen}
          aria-controls="conversation-list"
          onClick=${props.onOpenList}
        >
          Conversations
        </button>
        <h1 class="chat-title" title=${conversation}>${props.title}</h1>
      </div>
      <div class="chat-log" ref=${logRef} aria-live="polite">
        ${
          lines.length === 0 && loaded && !elsewhere
            ? html`<p class="muted empty">No messages yet. Say hello.</p>`
            : lines.map((line, index) => html`<${ChatBubble} key=${index} line=${line} />`)
        }
        ${elsewhere ? html`<p class="muted small replying">A reply is being written…</p>` : null}
      </div>
      <${ErrorBox} error=${error} />
      <${PendingFileChips} files=${pending.files} onRemove=${pending.remove} />
      <form
        class="composer"
        onSubmit=${(event: Event) => {
          event.preventDefault();
          void send();
        }}
      >
        <textarea
          name="message"
          rows="2"
          aria-label="Message"
          placeholder="Message (Enter to send, Shift+Enter for a new line)"
          value=${message}
          disabled=${!loaded}
          onInput=${(event: Event) => setMessage((event.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown=${onKeyDown}
          onPaste=${(event: ClipboardEvent) => {
            const files = Array.from(event.clipboardData?.files ?? []);
            if (files.length === 0) return;
            // A pasted picture is sent as a file, not as its name in the text.
            event.preventDefault();
            attach(files);
          }}
        ></textarea>
        <input
          ref=${fileInput}
          class="attach-input"
          type="file"
          multiple
          aria-label="Files to attach"
          onChange=${(event: Event) => {
            const input = event.currentTarget as HTMLInputElement;
            attach(Array.from(input.files ?? []));
            input.value = "";
          }}
        />
        <button
          type="button"
          class="secondary attach"
          title="Attach files (or paste or drop them here)"
          disabled=${!loaded || sending}
          onClick=${() => fileInput.current?.click()}
        >
          Attach
        </button>
        ${
          sending
            ? html`<button type="button" class="danger stop" onClick=${stop} disabled=${stopping}>
                ${stopping ? "Stopping…" : "Stop"}
              </button>`
            : html`<button
                type="submit"
                disabled=${!loaded || (message.trim() === "" && pending.files.length === 0)}
              >
                Send
              </button>`
        }
      </form>
    </section>
  `;
}
