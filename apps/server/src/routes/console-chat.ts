import { randomUUID } from "node:crypto";
import { formatSessionKey, type InboundMessage, isAlmanacError, UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { AttachmentIntake } from "../attachments/attachment-intake.js";
import { bodyLimitForFiles, checkBodyBesideFiles } from "../attachments/data-url.js";
import { attachmentNoticeText } from "../attachments/received-attachment.js";
import { receiveRequestFiles } from "../attachments/request-files.js";
import { checkSessionName, encodeSessionHeader, SESSION_HEADER } from "../http/session-name.js";
import { abortWhenClientLeaves, createLazyEventStream } from "../http/sse.js";
import type { SessionManager } from "../runtime/session-manager.js";

/** Files one console message may carry. */
const MAX_CONSOLE_FILES = 10;

const consoleChatBody = z
  .object({
    // Any name, used exactly as given (the console's own key mirrors it); checked by checkSessionName.
    conversation: z.string(),
    message: z.string(),
    /** Files sent with the message, each a `data:` URL (base64) with the file's name. */
    attachments: z
      .array(z.object({ name: z.string().max(255).optional(), data: z.string().startsWith("data:") }))
      .max(MAX_CONSOLE_FILES)
      .optional(),
  })
  .refine((body) => body.message.trim() !== "" || (body.attachments ?? []).length > 0, {
    error: "the message is empty",
    path: ["message"],
  });

/** One server-sent event of `POST /api/console/chat`. */
export type ConsoleChatEvent =
  | { readonly type: "delta"; readonly text: string }
  | { readonly type: "done"; readonly text: string; readonly sessionKey: string }
  /** The reply was stopped (`POST /api/sessions/{key}/stop`): `text` is the partial reply as kept, marked `[stopped]`. */
  | { readonly type: "stopped"; readonly text: string; readonly sessionKey: string }
  | { readonly type: "error"; readonly message: string; readonly code: string };

/** The session key of a console conversation: the console is its own channel, `web`. */
export function consoleSessionKey(conversation: string): string {
  return formatSessionKey({ channel: "web", account: "default", kind: "web", id: conversation });
}

/**
 * `POST /api/console/chat`: one turn for the web console, answered as server-sent events
 * (`delta`… then `done`, `stopped` or `error`). Errors before the first event are ordinary JSON errors with a status.
 * Files sent with the message (`attachments`, data URLs) are saved in the conversation's inbox before the turn.
 */
export function registerConsoleChat(
  app: FastifyInstance,
  sessions: SessionManager,
  attachments?: AttachmentIntake,
): void {
  const serverBodyLimit = app.initialConfig.bodyLimit ?? 1_048_576;
  app.post(
    "/api/console/chat",
    {
      schema: {
        tags: ["console"],
        summary: "Chat from the web console (server-sent events: delta, then done, stopped or error)",
      },
      ...(attachments === undefined
        ? {}
        : { bodyLimit: bodyLimitForFiles(attachments.maxBytes, serverBodyLimit) }),
    },
    async (request, reply) => {
      const parsed = consoleChatBody.safeParse(request.body);
      if (!parsed.success)
        throw new UserError(
          "request.invalid",
          `Body must be {conversation, message, attachments?}: ${z.prettifyError(parsed.error)}`,
        );
      const { message } = parsed.data;
      checkBodyBesideFiles(
        request.headers["content-length"],
        (parsed.data.attachments ?? []).reduce((chars, file) => chars + file.data.length, 0),
        serverBodyLimit,
      );
      const conversation = checkSessionName(parsed.data.conversation, "conversation");
      const sessionKey = consoleSessionKey(conversation);
      const inbound: InboundMessage = {
        sessionKey,
        channel: "web",
        id: randomUUID(),
        account: "default",
        conversation: { kind: "web", id: conversation },
        sender: { id: "console" },
        mentioned: true,
        text: message,
        receivedAt: Date.now(),
      };
      // The browser navigating away closes the response before it finished: that stops the turn.
      const signal = abortWhenClientLeaves(reply);
      const files = parsed.data.attachments ?? [];
      if (files.length > 0 && attachments === undefined)
        throw new UserError("request.invalid", "This server takes no files with console messages.");
      const received =
        files.length === 0 || attachments === undefined
          ? undefined
          : await receiveRequestFiles(
              attachments,
              sessionKey,
              files.map((file, index) => ({
                url: file.data,
                kind: "file",
                where: `attachments[${index}]`,
                ...(file.name === undefined ? {} : { name: file.name }),
              })),
              signal,
            );
      // What could not be taken is said above the reply, as in the chat apps.
      const notices = attachmentNoticeText(received);
      const stream = createLazyEventStream(reply, { [SESSION_HEADER]: encodeSessionHeader(sessionKey) });
      const send = (event: ConsoleChatEvent) => stream.send(event);
      try {
        let noticed = notices === "";
        const result = await sessions.handle({
          inbound,
          ...(received === undefined ? {} : { attachments: received }),
          stream: true,
          signal,
          onTextDelta: (text) => {
            send({ type: "delta", text: noticed ? text : `${notices}${text}` });
            noticed = true;
          },
        });
        send({
          type: result.stopped === true ? "stopped" : "done",
          text: `${notices}${result.text}`,
          sessionKey,
        });
        stream.end();
      } catch (error) {
        if (!stream.started) throw error;
        request.log.error({ err: error }, "console turn failed");
        // Provider and user errors say what happened (as their JSON error would); internal ones stay in the log.
        const known = isAlmanacError(error) && error.category !== "internal";
        const message = known ? error.message : "The assistant failed while answering; see the server log.";
        const code = known ? error.code : "turn.failed";
        stream.send({ type: "error", message, code });
        stream.end();
      }
      return reply;
    },
  );
}
