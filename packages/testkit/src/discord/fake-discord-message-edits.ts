import type { FakeRestReply } from "./fake-discord-interactions.js";
import {
  editMessageBodySchema,
  invalidFormBody,
  invalidFormBodyFrom,
  MAX_CONTENT_LENGTH,
} from "./fake-discord-schemas.js";
import { type FakeDiscordWorld, withComponentIds } from "./fake-discord-world.js";

/** One accepted `PATCH /channels/:id/messages/:id`: the message's content after the edit, and when. */
export interface FakeMessageEdit {
  readonly channelId: string;
  readonly messageId: string;
  readonly content: string;
  /** Milliseconds since the epoch (the fake's clock). */
  readonly at: number;
}

/** A message removed from a channel: by the bot (`DELETE`), or by someone else (a test's `deleteMessage`). */
export interface FakeMessageDeletion {
  readonly channelId: string;
  readonly messageId: string;
  readonly by: "bot" | "someone-else";
  readonly at: number;
}

/** What editing and deleting need from the rest of the fake. */
export interface FakeMessageEditDependencies {
  readonly world: FakeDiscordWorld;
  readonly clock: () => number;
  readonly message: (id: string) => Record<string, unknown> | undefined;
  /** Stores the edited message and dispatches MESSAGE_UPDATE. */
  readonly updated: (message: Record<string, unknown>) => void;
  /** Forgets the message and dispatches MESSAGE_DELETE. */
  readonly deleted: (message: Record<string, unknown>) => void;
}

/** Edits and deletions of messages, with Discord's refusals. */
export interface FakeMessageEdits {
  /** `PATCH /channels/:channel/messages/:message`. */
  edit(channelId: string, messageId: string, body: unknown): FakeRestReply;
  /** `DELETE /channels/:channel/messages/:message` by the bot. */
  remove(channelId: string, messageId: string): FakeRestReply;
  /** Deletes a message as a person or moderator would; later edits of it get 404 Unknown Message. */
  removeBySomeoneElse(messageId: string): void;
  edits(): readonly FakeMessageEdit[];
  deletions(): readonly FakeMessageDeletion[];
}

const unknownMessage: FakeRestReply = { status: 404, body: { message: "Unknown Message", code: 10008 } };

/**
 * Creates the edit/delete half of the fake. Like Discord: a message of another channel or one deleted is
 * 404 Unknown Message (10008); a message of someone else cannot be edited (403, 50005); content over 2000
 * characters is 400 (50035); an edit that leaves nothing to show is 400 (50006).
 */
export function createFakeMessageEdits(dependencies: FakeMessageEditDependencies): FakeMessageEdits {
  const editRecords: FakeMessageEdit[] = [];
  const deletionRecords: FakeMessageDeletion[] = [];
  const { world } = dependencies;

  const find = (channelId: string, messageId: string) => {
    const message = dependencies.message(messageId);
    return message !== undefined && message.channel_id === channelId ? message : undefined;
  };
  const authorId = (message: Record<string, unknown>) => {
    const author: unknown = message.author;
    return typeof author === "object" && author !== null && "id" in author ? author.id : undefined;
  };

  return {
    edit(channelId, messageId, body) {
      const message = find(channelId, messageId);
      if (message === undefined) return unknownMessage;
      if (authorId(message) !== world.botUser.id) {
        return {
          status: 403,
          body: { message: "Cannot edit a message authored by another user", code: 50005 },
        };
      }
      const parsed = editMessageBodySchema.safeParse(body);
      if (!parsed.success) return { status: 400, body: invalidFormBodyFrom(parsed.error) };
      const { content, components, embeds } = parsed.data;
      if (content !== undefined && content !== null && content.length > MAX_CONTENT_LENGTH) {
        return {
          status: 400,
          body: invalidFormBody("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length."),
        };
      }
      const next: Record<string, unknown> = {
        ...message,
        ...(content === undefined ? {} : { content: content ?? "" }),
        ...(components === undefined ? {} : { components: withComponentIds(components ?? []) }),
        ...(embeds === undefined ? {} : { embeds: embeds ?? [] }),
        edited_timestamp: new Date(dependencies.clock()).toISOString(),
      };
      const shows = (field: string) => Array.isArray(next[field]) && (next[field] as unknown[]).length > 0;
      if (String(next.content ?? "").trim() === "" && !["embeds", "components", "attachments"].some(shows)) {
        return { status: 400, body: { message: "Cannot send an empty message", code: 50006 } };
      }
      editRecords.push({
        channelId,
        messageId,
        content: String(next.content ?? ""),
        at: dependencies.clock(),
      });
      dependencies.updated(next);
      return { status: 200, body: next };
    },
    remove(channelId, messageId) {
      const message = find(channelId, messageId);
      if (message === undefined) return unknownMessage;
      if (authorId(message) !== world.botUser.id) {
        return { status: 403, body: { message: "Missing Permissions", code: 50013 } };
      }
      deletionRecords.push({ channelId, messageId, by: "bot", at: dependencies.clock() });
      dependencies.deleted(message);
      return { status: 204 };
    },
    removeBySomeoneElse(messageId) {
      const message = dependencies.message(messageId);
      if (message === undefined) throw new Error(`fake discord: no message ${messageId} to delete`);
      deletionRecords.push({
        channelId: String(message.channel_id),
        messageId,
        by: "someone-else",
        at: dependencies.clock(),
      });
      dependencies.deleted(message);
    },
    edits: () => [...editRecords],
    deletions: () => [...deletionRecords],
  };
}
