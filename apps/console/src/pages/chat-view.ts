import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ChatBubble } from "../components/chat-bubble.js";
import { ChatComposer } from "../components/chat-composer.js";
import { PendingFileChips, usePendingFiles } from "../components/pending-files.js";
import { ErrorBox } from "../ui.js";
import { useChatHistory } from "./use-chat-history.js";
import { useSendMessage } from "./use-send-message.js";

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
  const [error, setError] = useState<unknown>();
  const history = useChatHistory({
    conversation,
    running: props.running,
    deliveries: props.deliveries,
    onError: setError,
  });
  const { lines, loaded } = history;
  const pending = usePendingFiles();
  const sender = useSendMessage({
    conversation,
    signal: props.signal,
    history,
    pending,
    setError,
    onAnswered: props.onAnswered,
  });
  const [dragging, setDragging] = useState(false);
  const logRef = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const log = logRef.current;
    if (log) log.scrollTop = log.scrollHeight;
  }, [lines]);

  const attach = (files: readonly File[]) => {
    const problem = pending.add(files);
    setError(problem === undefined ? undefined : new Error(problem));
  };

  const elsewhere = props.running && !sender.sending && !history.sentDuringRun.current;
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
      <${ChatComposer}
        message=${sender.message}
        loaded=${loaded}
        sending=${sender.sending}
        stopping=${sender.stopping}
        hasFiles=${pending.files.length > 0}
        onMessage=${sender.setMessage}
        onAttach=${attach}
        onSend=${() => void sender.send()}
        onStop=${sender.stop}
      />
    </section>
  `;
}
