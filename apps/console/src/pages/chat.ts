import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ConversationList } from "../components/conversation-list.js";
import {
  conversationHref,
  conversationOf,
  loadConversations,
  newConversationId,
  rememberConversation,
  rememberedConversation,
  webSessionKey,
} from "../conversations.js";
import { useDebounced, useLiveEvents } from "../live.js";
import { asArray, asRecord, str } from "../read.js";
import { navigate } from "../router.js";
import { useLoad } from "../ui.js";
import { ChatView } from "./chat-view.js";

/** The console conversations whose reply is being written, kept from the live events. */
function useRunningConversations(onChange: () => void): ReadonlySet<string> {
  const [running, setRunning] = useState<ReadonlySet<string>>(new Set());
  useLiveEvents((event) => {
    const id = conversationOf(str(event.data.sessionKey));
    switch (event.type) {
      case "snapshot": {
        const turns = asArray(asRecord(event.data.sessions).running).map(asRecord);
        const ids = turns.map((turn) => conversationOf(str(turn.sessionKey)));
        setRunning(new Set(ids.filter((running): running is string => running !== undefined)));
        onChange();
        break;
      }
      case "turn-started":
        if (id !== undefined) setRunning((previous) => new Set(previous).add(id));
        break;
      case "turn-finished":
        if (id === undefined) break;
        setRunning((previous) => {
          const next = new Set(previous);
          next.delete(id);
          return next;
        });
        onChange();
        break;
      case "session-created":
      case "session-reset":
      case "session-deleted":
        if (id !== undefined) onChange();
        break;
      default:
        break;
    }
  });
  return running;
}

/**
 * How many scheduled tasks' replies were delivered into `conversation` while the page was open (each
 * `task-delivered` event for its session): the view reads its history again on each, so a reminder shows up in
 * the open chat.
 */
function useTaskDeliveries(conversation: string): number {
  const [count, setCount] = useState(0);
  useLiveEvents((event) => {
    if (event.type === "task-delivered" && str(event.data.sessionKey) === webSessionKey(conversation))
      setCount((previous) => previous + 1);
  });
  return count;
}

/**
 * Talks to the assistant as the console's own channel (`web`): the conversations beside the open one (a
 * drawer on a phone), which `?conversation=` names; without it, the last one this browser had open, or a
 * new one.
 */
export function ChatPage(props: { conversation: string | undefined }) {
  const [fallback] = useState(() => rememberedConversation() ?? newConversationId());
  const conversation = props.conversation ?? fallback;
  const [listOpen, setListOpen] = useState(false);
  const list = useLoad(loadConversations, "conversations");
  const refresh = useDebounced(list.reload);
  const running = useRunningConversations(refresh);
  const deliveries = useTaskDeliveries(conversation);
  // Leaving the chat page cancels a reply still streaming; switching conversations lets it finish.
  const pageStreams = useRef(new AbortController());
  useEffect(() => () => pageStreams.current.abort(), []);

  useEffect(() => {
    rememberConversation(conversation);
    // The URL names the open conversation, so a reload or a shared link opens it again.
    if (props.conversation === undefined) navigate(conversationHref(conversation), { replace: true });
  }, [conversation, props.conversation]);

  useEffect(() => {
    if (!listOpen) return;
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && setListOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [listOpen]);

  const newChat = () => {
    setListOpen(false);
    navigate(conversationHref(newConversationId()));
  };
  const known = list.data?.find((entry) => entry.id === conversation);
  const title = known ? (known.title ?? known.id) : "New chat";
  return html`
    <div class=${`chat-page${listOpen ? " list-open" : ""}`}>
      <${ConversationList}
        conversations=${list.data ?? []}
        current=${conversation}
        running=${running}
        error=${list.error}
        open=${listOpen}
        onNewChat=${newChat}
        onChoose=${() => setListOpen(false)}
      />
      ${
        listOpen
          ? html`<button
              type="button"
              class="drawer-backdrop"
              aria-label="Close the conversation list"
              onClick=${() => setListOpen(false)}
            ></button>`
          : null
      }
      <${ChatView}
        key=${conversation}
        conversation=${conversation}
        title=${title}
        running=${running.has(conversation)}
        deliveries=${deliveries}
        signal=${pageStreams.current.signal}
        listOpen=${listOpen}
        onAnswered=${refresh}
        onOpenList=${() => setListOpen(true)}
      />
    </div>
  `;
}
