import { defineTool, type Tool } from "@almanac/agent";
import { AttachmentTooLargeError, isAlmanacError, type OutboundFile, parseSessionKey } from "@almanac/core";
import type { MemoryScope } from "@almanac/memory-files";
import { sharedScopePrefix } from "@almanac/memory-files";
import { z } from "zod";
import { readWorkspaceFile } from "../attachments/workspace-file.js";
import type { FileSendOutcome } from "../channels/channel-hub.js";
import type { SentFile } from "../events/event-bus.js";
import { formatBytes } from "../runtime/turn-input.js";
import type { ServerToolSource } from "./tool-catalog.js";

/** The tool's name: the console recognises a sent file in a transcript by a successful call of it. */
export const SEND_FILE_TOOL = "send_file";

/**
 * Channels whose conversations have no platform to upload to (the console's, the OpenAI endpoint's): a file sent
 * there is recorded instead, by the call in the transcript and the live event, and the console shows it.
 */
const RECORDED_CHANNELS: ReadonlySet<string> = new Set(["web", "api"]);

/** Options of {@link sendFileToolSource}. */
export interface SendFileToolOptions {
  /** The workspace folder paths are relative to. */
  readonly workspace: string;
  /** Largest file sent, in bytes (`ALMANAC_ATTACHMENT_MAX_MB`); a platform's own limit may be lower. */
  readonly maxBytes: number;
  /** Uploads a file to a chat app's conversation (the channel hub's `sendFile`). */
  readonly sendToChat: (file: OutboundFile) => Promise<FileSendOutcome>;
  /** Told of every file sent, chat apps' and recorded ones alike (the `file-sent` live event). */
  readonly onSent: (sent: SentFile) => void;
}

/** The channel of a session key, or undefined for a key that is not canonical. */
function channelOf(sessionKey: string): string | undefined {
  try {
    return parseSessionKey(sessionKey).channel;
  } catch {
    return undefined;
  }
}

// Built once: a turn makes its tools afresh (they act for its conversation), their schemas need not be.
const sendFileParameters = z.object({
  path: z.string().min(1).max(1024),
  caption: z.string().max(1000).optional(),
});

/** Kept short: every turn's prompt carries it (a 4K window has little room to spare). */
function description(scope: MemoryScope): string {
  const which = scope.kind === "owner" ? "a workspace file" : `a file of ${sharedScopePrefix(scope)}`;
  return `Send ${which} to this conversation (images are shown). Path as the attachment notes give it, e.g. inbox/2026-12-06/cat.png.`;
}

/** One `send_file` tool for a turn of `sessionKey` in `scope`. */
function createSendFileTool(options: SendFileToolOptions, scope: MemoryScope, sessionKey: string): Tool {
  return defineTool({
    name: SEND_FILE_TOOL,
    description: description(scope),
    parameters: sendFileParameters,
    async execute({ path, caption }) {
      const channel = channelOf(sessionKey);
      if (channel === undefined)
        return {
          content: "This conversation is on no channel I know, so no file can be sent to it.",
          isError: true,
        };
      const file = await readWorkspaceFile(options.workspace, scope, path, options.maxBytes);
      if (!file.type.accepted)
        return { content: `I do not send "${file.path}": ${file.type.reason}.`, isError: true };
      const { mime } = file.type.type;
      const facts = `${mime}, ${formatBytes(file.bytes.length)}`;
      const sent: SentFile = {
        sessionKey,
        path: file.path,
        name: file.name,
        contentType: mime,
        size: file.bytes.length,
        ...(caption === undefined || caption.trim() === "" ? {} : { caption }),
      };
      if (RECORDED_CHANNELS.has(channel)) {
        options.onSent(sent);
        return `Sent ${file.path} (${facts}); it is shown in this conversation.`;
      }
      let outcome: FileSendOutcome;
      try {
        outcome = await options.sendToChat({
          sessionKey,
          name: file.name,
          bytes: file.bytes,
          contentType: mime,
          ...(sent.caption === undefined ? {} : { caption: sent.caption }),
        });
      } catch (error) {
        // The platform's own limits (size, type) come as the adapter's user errors, in words for the model.
        const why =
          error instanceof AttachmentTooLargeError
            ? `it is larger than ${formatBytes(error.limitBytes)}, the most ${channel} takes.`
            : isAlmanacError(error) && error.category === "user"
              ? error.message
              : undefined;
        if (why === undefined) throw error;
        return { content: `"${file.path}" (${facts}) was not sent: ${why}`, isError: true };
      }
      switch (outcome) {
        case "sent":
          options.onSent(sent);
          return `Sent ${file.path} (${facts}) to this conversation.`;
        case "cannot-send-files":
          return {
            content: `This chat (${channel}) cannot receive files from me, so "${file.path}" was not sent. If it is a text file, paste its text into your reply instead.`,
            isError: true,
          };
        case "no-channel":
          return {
            content: `This conversation's channel (${channel}) is not connected on this server, so no file can be sent to it.`,
            isError: true,
          };
      }
    },
  }) as unknown as Tool;
}

/**
 * `send_file`: sends a workspace file to the current conversation, in every scope by the same rule as
 * {@link readWorkspaceFile} (the owner any workspace file, a shared chat only its own folder). A chat app gets it
 * through its adapter's upload; the console's and the API's conversations get it recorded (docs/attachments.md).
 */
export function sendFileToolSource(options: SendFileToolOptions): ServerToolSource {
  return {
    name: "files",
    tools: (scope, sessionKey) => [createSendFileTool(options, scope, sessionKey)],
  };
}
