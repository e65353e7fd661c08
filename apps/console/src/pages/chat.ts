import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, sessionPath, stopReply, streamChat } from "../api.js";
import { Markdown } from "../components/markdown.js";
import { asArray, asRecord, messageText, str } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";

const CONVERSATION_KEY = "almanac.conversation";

interface ChatLine {
  readonly role: string;
  readonly text: string;
  readonly streaming?: boolean;
  /** The reply was stopped before it was complete. */
  readonly stopped?: boolean;
}

/** The session key of a console conversation (mirrors the server's `consoleSessionKey`). */
function webSessionKey(conversation: string): string {
  const encode = (part: string) => part.replaceAll("%", "%25").replaceAll(":", "%3A");
  return `web:default:web:${encode(conversation)}`;
}

function conversationOf(key: string): string | undefined {
  const parts = key.split(":");
  if (parts[0] !== "web" || parts[2] !== "web" || parts[3] === undefined) return undefined;
  return parts[3].replaceAll("%3A", ":").replaceAll("%25", "%");
}

/** The server marks a stopped reply's kept text with a last `[stopped]` line; the chat shows a badge instead. */
function withoutStopMark(text: string): string {
  return text.replace(/\n*\[stopped\]\s*$/, "");
}

async function loadHistory(conversation: string): Promise<ChatLine[]> {
  try {
    const detail = asRecord(await api(sessionPath(webSessionKey(conversation))));
    return asArray(detail.messages)
      .map(asRecord)
      .filter((message) => message.role === "user" || message.role === "assistant")
      .map((message) => ({ role: str(message.role), text: messageText(message.content) }))
      .filter((line) => line.text !== "");
  } catch (error) {
    if (asRecord(error).status === 404) return [];
    throw error;
  }
}

/** Talks to the assistant as the console's own channel (`web`), the reply streaming in as it is written. */
export function ChatPage() {
  const [conversation, setConversation] = useState(() => localStorage.getItem(CONVERSATION_KEY) ?? "console");
  const [draftConversation, setDraftConversation] = useState(conversation);
  const [lines, setLines] = useState<ChatLine[]>([]);
  // The conversation whose history is on screen. Until it matches `conversation` the composer is disabled:
  // a message sent earlier would be wiped from view when the history arrives.
  const [loadedFor, setLoadedFor] = useState<string>();
  const loading = loadedFor !== conversation;
  const [message, setMessage] = useState("");
  const [sending, setSending] = useState(false);
  const [stopping, setStopping] = useState(false);
  const [error, setError] = useState<unknown>();
  const logRef = useRef<HTMLDivElement>(null);
  const abortRef = useRef<AbortController>();

  const known = useLoad(async () => {
    const body = asRecord(await api("/api/sessions"));
    return asArray(body.sessions)
      .map((session) => conversationOf(str(asRecord(session).key)))
      .filter((id): id is string => id !== undefined);
  }, "conversations");

  useEffect(() => {
    localStorage.setItem(CONVERSATION_KEY, conversation);
    setDraftConversation(conversation);
    setError(undefined);
    let current = true;
    loadHistory(conversation).then(
      (history) => {
        if (!current) return;
        setLines(history);
        setLoadedFor(conversation);
      },
      (caught: unknown) => {
        if (!current) return;
        setError(caught);
        setLoadedFor(conversation);
      },
    );
    return () => {
      current = false;
    };
  }, [conversation]);

  useEffect(() => () => abortRef.current?.abort(), []);
  useEffect(() => {
    const log = logRef.current;
    if (log) log.scrollTop = log.scrollHeight;
  }, [lines]);

  const send = async () => {
    const text = message.trim();
    if (text === "" || sending || loading) return;
    setMessage("");
    setSending(true);
    setError(undefined);
    setLines((previous) => [
      ...previous,
      { role: "user", text },
      { role: "assistant", text: "", streaming: true },
    ]);
    const replaceLast = (update: (line: ChatLine) => ChatLine) =>
      setLines((previous) => {
        const last = previous.at(-1);
        return last ? [...previous.slice(0, -1), update(last)] : previous;
      });
    const abort = new AbortController();
    abortRef.current = abort;
    try {
      const done = await streamChat(
        conversation,
        text,
        (delta) => replaceLast((line) => ({ ...line, text: line.text + delta })),
        abort.signal,
      );
      replaceLast((line) =>
        done.stopped
          ? { role: "assistant", text: withoutStopMark(done.text || line.text), stopped: true }
          : { role: "assistant", text: done.text },
      );
      if (!known.data?.includes(conversation)) known.reload();
    } catch (caught) {
      // A stop reported as the turn's error still keeps what was written, as a stopped reply.
      const stopped = caught instanceof ApiError && caught.code === "turn.stopped";
      replaceLast((line) => ({ ...line, streaming: false, ...(stopped ? { stopped: true } : {}) }));
      if (!stopped) setError(caught);
    } finally {
      setSending(false);
      setStopping(false);
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
  const openConversation = (event: Event) => {
    event.preventDefault();
    const id = draftConversation.trim();
    if (id !== "") setConversation(id);
  };

  return html`
    <section class="chat">
      <form class="conversation-bar" onSubmit=${openConversation}>
        <label for="conversation">Conversation</label>
        <input
          id="conversation"
          list="known-conversations"
          value=${draftConversation}
          onInput=${(event: Event) => setDraftConversation((event.currentTarget as HTMLInputElement).value)}
        />
        <datalist id="known-conversations">
          ${(known.data ?? []).map((id) => html`<option value=${id} />`)}
        </datalist>
        <button type="submit" class="secondary" disabled=${draftConversation.trim() === conversation}>Open</button>
      </form>
      <div class="chat-log" ref=${logRef} aria-live="polite">
        ${
          lines.length === 0
            ? html`<p class="muted empty">No messages in “${conversation}” yet. Say hello.</p>`
            : lines.map(
                (line) =>
                  html`<div class=${`bubble ${line.role}${line.streaming ? " streaming" : ""}`} data-role=${line.role}>
                    ${
                      line.role === "assistant" && line.text !== ""
                        ? html`<${Markdown} text=${line.text} />`
                        : line.text || (line.streaming ? "…" : "")
                    }
                    ${line.stopped ? html`<span class="badge stopped-mark">stopped</span>` : null}
                  </div>`,
              )
        }
      </div>
      <${ErrorBox} error=${error} />
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
          placeholder="Message (Enter to send, Shift+Enter for a new line)"
          value=${message}
          disabled=${loading}
          onInput=${(event: Event) => setMessage((event.currentTarget as HTMLTextAreaElement).value)}
          onKeyDown=${onKeyDown}
        ></textarea>
        ${
          sending
            ? html`<button type="button" class="danger stop" onClick=${stop} disabled=${stopping}>
                ${stopping ? "Stopping…" : "Stop"}
              </button>`
            : html`<button type="submit" disabled=${loading || message.trim() === ""}>Send</button>`
        }
      </form>
    </section>
  `;
}
