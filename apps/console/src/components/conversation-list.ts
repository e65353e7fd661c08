import { html } from "htm/preact";
import { type Conversation, conversationHref } from "../conversations.js";
import { formatAgo, formatTime, isoTime } from "../read.js";
import { Link } from "../router.js";
import { ErrorBox } from "../ui.js";

/** What the conversation list shows. */
export interface ConversationListProps {
  readonly conversations: readonly Conversation[];
  /** The open conversation; listed first as "New chat" while it has no message on the server yet. */
  readonly current: string;
  /** Conversations whose reply is being written right now (from any tab). */
  readonly running: ReadonlySet<string>;
  readonly error: unknown;
  /** On a phone the list is a drawer: shown only while open. */
  readonly open: boolean;
  onNewChat(): void;
  /** A conversation was chosen (the drawer closes). */
  onChoose(): void;
}

function Entry(props: {
  conversation: Conversation | undefined;
  id: string;
  current: boolean;
  running: boolean;
  onChoose: () => void;
}) {
  const { conversation, id } = props;
  const title = conversation === undefined ? "New chat" : (conversation.title ?? id);
  const at = conversation?.lastActivity;
  return html`<li>
    <${Link}
      href=${conversationHref(id)}
      class=${`conversation${props.current ? " active" : ""}`}
      current=${props.current}
      onNavigate=${props.onChoose}
    >
      <span class="conversation-title">${title}</span>
      <span class="conversation-meta muted small">
        ${props.running ? html`<span class="state running">replying…</span>` : null}
        ${at === undefined ? null : html`<time datetime=${isoTime(at)} title=${formatTime(at)}>${formatAgo(at)}</time>`}
      </span>
    <//>
  </li>`;
}

/**
 * The console's conversations, newest first, each with its title (its first message) and last activity, the
 * open one highlighted, and a New chat button. A sidebar beside the chat; a drawer on a phone.
 */
export function ConversationList(props: ConversationListProps) {
  const listed = props.conversations.some((conversation) => conversation.id === props.current);
  return html`<nav id="conversation-list" class=${`conversations${props.open ? " open" : ""}`} aria-label="Conversations">
    <button type="button" class="new-chat" onClick=${props.onNewChat}>New chat</button>
    <${ErrorBox} error=${props.error} />
    <ul>
      ${
        listed
          ? null
          : html`<${Entry} conversation=${undefined} id=${props.current} current=${true} running=${false}
              onChoose=${props.onChoose} />`
      }
      ${props.conversations.map(
        (conversation) => html`<${Entry}
          key=${conversation.id}
          conversation=${conversation}
          id=${conversation.id}
          current=${conversation.id === props.current}
          running=${props.running.has(conversation.id)}
          onChoose=${props.onChoose}
        />`,
      )}
    </ul>
  </nav>`;
}
