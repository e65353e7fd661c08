import { randomUUID } from "node:crypto";
import { formatSessionKey, type InboundMessage, isAlmanacError, UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { checkSessionName, encodeSessionHeader, SESSION_HEADER } from "../http/session-name.js";
import { abortWhenClientLeaves, createLazyEventStream } from "../http/sse.js";
import type { SessionManager } from "../runtime/session-manager.js";

const consoleChatBody = z.object({
  // Any name, used exactly as given (the console's own key mirrors it); checked by checkSessionName.
  conversation: z.string(),
  message: z.string().refine((text) => text.trim() !== "", { error: "the message is empty" }),
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
 */
export function registerConsoleChat(app: FastifyInstance, sessions: SessionManager): void {
  app.post(
    "/api/console/chat",
    {
      schema: {
        tags: ["console"],
        summary: "Chat from the web console (server-sent events: delta, then done, stopped or error)",
      },
    },
    async (request, reply) => {
      const parsed = consoleChatBody.safeParse(request.body);
      if (!parsed.success)
        throw new UserError(
          "request.invalid",
          `Body must be {conversation, message}: ${z.prettifyError(parsed.error)}`,
        );
      const { message } = parsed.data;
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
      const stream = createLazyEventStream(reply, { [SESSION_HEADER]: encodeSessionHeader(sessionKey) });
      const send = (event: ConsoleChatEvent) => stream.send(event);
      try {
        const result = await sessions.handle({
          inbound,
          stream: true,
          signal,
          onTextDelta: (text) => send({ type: "delta", text }),
        });
        send({ type: result.stopped === true ? "stopped" : "done", text: result.text, sessionKey });
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
