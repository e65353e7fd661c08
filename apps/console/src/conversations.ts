// Console conversations: the sessions of the console's own channel, `web`, one per conversation id.
import { api } from "./api.js";
import { asArray, asRecord, num, str } from "./read.js";

/** Every console conversation's session key starts with this; the conversation id follows. */
const WEB_KEY_PREFIX = "web:default:web:";
const REMEMBERED_KEY = "almanac.conversation";

/** The session key of a console conversation (mirrors the server's `consoleSessionKey`). */
export function webSessionKey(conversation: string): string {
  return `${WEB_KEY_PREFIX}${conversation.replace(/[%:]/g, (character) => (character === "%" ? "%25" : "%3A"))}`;
}

/** The conversation id of a console session key, or undefined for any other session. */
export function conversationOf(key: string): string | undefined {
  if (!key.startsWith(WEB_KEY_PREFIX)) return undefined;
  const id = key.slice(WEB_KEY_PREFIX.length);
  // A fifth part (a thread) never comes from the console.
  if (id === "" || id.includes(":")) return undefined;
  return id.replace(/%(25|3A)/g, (_escape, code: string) => (code === "25" ? "%" : ":"));
}

/** The console path that opens a conversation (a link: it survives a reload and opens in a new tab). */
export function conversationHref(conversation: string): string {
  return `/chat?conversation=${encodeURIComponent(conversation)}`;
}

/**
 * A fresh conversation id: the time and random bits, short enough to read. `crypto.getRandomValues`, not
 * `randomUUID`, which a console served over plain HTTP on a LAN address (not a secure context) lacks.
 */
export function newConversationId(now = Date.now()): string {
  const random = crypto.getRandomValues(new Uint8Array(4));
  const suffix = Array.from(random, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `chat-${now.toString(36)}-${suffix}`;
}

/** The conversation this browser had open last, if any. */
export function rememberedConversation(): string | undefined {
  return localStorage.getItem(REMEMBERED_KEY) ?? undefined;
}

/** Remembers the open conversation, so `/chat` returns to it. */
export function rememberConversation(conversation: string): void {
  localStorage.setItem(REMEMBERED_KEY, conversation);
}

/** One console conversation as the list shows it. */
export interface Conversation {
  readonly id: string;
  readonly key: string;
  /** The first message, shortened by the server; undefined for one stored before titles were recorded. */
  readonly title: string | undefined;
  readonly lastActivity: number | undefined;
}

/** The console's conversations from `GET /api/sessions`, most recent activity first. */
export async function loadConversations(): Promise<Conversation[]> {
  const body = asRecord(await api("/api/sessions"));
  const conversations: Conversation[] = [];
  for (const session of asArray(body.sessions).map(asRecord)) {
    const key = str(session.key);
    const id = conversationOf(key);
    if (id === undefined) continue;
    const title = str(session.title).trim();
    conversations.push({ id, key, title: title || undefined, lastActivity: num(session.lastActivity) });
  }
  return conversations.sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
}
