import { randomUUID } from "node:crypto";
import {
  formatSessionKey,
  type ImageBlock,
  type InboundMessage,
  isAlmanacError,
  UserError,
} from "@almanac/core";
import { openAIChatMessageSchema } from "@almanac/openai-wire";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { AttachmentIntake } from "../attachments/attachment-intake.js";
import { bodyLimitForFiles, checkBodyBesideFiles, dataUrlChars } from "../attachments/data-url.js";
import { attachmentNoticeText } from "../attachments/received-attachment.js";
import { receiveRequestFiles } from "../attachments/request-files.js";
import {
  checkSessionName,
  decodeSessionHeader,
  encodeSessionHeader,
  SESSION_HEADER,
} from "../http/session-name.js";
import { abortWhenClientLeaves, createLazyEventStream } from "../http/sse.js";
import type { SessionManager } from "../runtime/session-manager.js";

const chatBodySchema = z.object({
  model: z.string().optional(),
  messages: z.array(z.unknown()).min(1, "messages must hold at least one message"),
  stream: z.boolean().optional(),
  // Length is checked in characters by checkSessionName, the same rule as for the header.
  user: z.string().optional(),
});

/** The model id Almanac presents to OpenAI clients: the assistant, not the upstream model. */
export const ALMANAC_MODEL_ID = "almanac";

/** The conversation name: the `X-Almanac-Session` header (percent-encoded UTF-8), else `user`, else `default`. */
function conversationIdFor(header: string | string[] | undefined, user: string | undefined): string {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw !== undefined) return checkSessionName(decodeSessionHeader(raw), "X-Almanac-Session");
  if (user !== undefined) return checkSessionName(user, "user");
  return "default";
}

/** The error event that ends a stream which failed after it began: the API's error shape, then `[DONE]`. */
function streamErrorBody(error: unknown): { error: { message: string; type: string; code: string } } {
  if (isAlmanacError(error) && error.category !== "internal") {
    const type = error.category === "user" ? "invalid_request_error" : "server_error";
    return { error: { message: error.message, type, code: error.code } };
  }
  return {
    error: {
      message: "The assistant failed while answering; see the server log.",
      type: "server_error",
      code: "turn.failed",
    },
  };
}

/** Takes the newest user message as the turn's input; earlier messages are the session's business. */
function newestUserInput(messages: readonly unknown[]): {
  text: string;
  images: ImageBlock[];
  index: number;
} {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const parsed = openAIChatMessageSchema.safeParse(messages[index]);
    if (!parsed.success) {
      throw new UserError(
        "request.invalid",
        `messages[${index}] is not a valid chat message: ${z.prettifyError(parsed.error)}`,
      );
    }
    if (parsed.data.role !== "user") continue;
    const { content } = parsed.data;
    const input = userInputOf(content);
    if (input.text.trim() === "" && input.images.length === 0) {
      // Refused, not stored: an empty message in the history is one strict models refuse on every later turn.
      throw new UserError(
        "request.invalid",
        `messages[${index}] (the newest user message) has no content: send text or an image part.`,
      );
    }
    return { ...input, index };
  }
  throw new UserError("request.invalid", 'messages must contain at least one message with role "user".');
}

function userInputOf(
  content: Extract<z.infer<typeof openAIChatMessageSchema>, { role: "user" }>["content"],
): { text: string; images: ImageBlock[] } {
  if (typeof content === "string") return { text: content, images: [] };
  const text = content.flatMap((part) => (part.type === "text" ? [part.text] : [])).join("\n");
  const images = content.flatMap((part): ImageBlock[] =>
    part.type === "image_url"
      ? [
          part.image_url.detail
            ? { type: "image", url: part.image_url.url, detail: part.image_url.detail }
            : { type: "image", url: part.image_url.url },
        ]
      : [],
  );
  return { text, images };
}

/**
 * `POST /v1/chat/completions` and `GET /v1/models`: any OpenAI client can talk to the assistant. Image parts of the
 * newest user message (`data:` URLs) are saved in the conversation's inbox before the turn, so the body may be as
 * large as a file of `ALMANAC_ATTACHMENT_MAX_MB` in base64.
 */
export function registerOpenAIRoutes(
  app: FastifyInstance,
  sessions: SessionManager,
  attachments: AttachmentIntake,
): void {
  const serverBodyLimit = app.initialConfig.bodyLimit ?? 1_048_576;
  app.get("/v1/models", { schema: { tags: ["openai"], summary: "Models (the assistant)" } }, async () => ({
    object: "list",
    data: [{ id: ALMANAC_MODEL_ID, object: "model", created: 0, owned_by: "almanac" }],
  }));

  app.post(
    "/v1/chat/completions",
    {
      schema: { tags: ["openai"], summary: "Chat with the assistant (the session keeps the history)" },
      bodyLimit: bodyLimitForFiles(attachments.maxBytes, serverBodyLimit),
    },
    async (request, reply) => {
      const parsed = chatBodySchema.safeParse(request.body);
      if (!parsed.success)
        throw new UserError("request.invalid", `Invalid request: ${z.prettifyError(parsed.error)}`);
      const body = parsed.data;
      checkBodyBesideFiles(request.headers["content-length"], dataUrlChars(body.messages), serverBodyLimit);
      const input = newestUserInput(body.messages);
      const conversationId = conversationIdFor(request.headers["x-almanac-session"], body.user);
      const sessionKey = formatSessionKey({
        channel: "api",
        account: "default",
        kind: "api",
        id: conversationId,
      });
      const inbound: InboundMessage = {
        sessionKey,
        channel: "api",
        id: randomUUID(),
        account: "default",
        conversation: { kind: "api", id: conversationId },
        mentioned: true,
        sender: { id: body.user ?? "api" },
        text: input.text,
        receivedAt: Date.now(),
      };
      const id = `chatcmpl-${randomUUID().replaceAll("-", "")}`;
      const created = Math.floor(Date.now() / 1000);
      const model = body.model ?? ALMANAC_MODEL_ID;
      // The response's close fires when the client goes away before we finished: that stops the turn.
      const signal = abortWhenClientLeaves(reply);
      // Every header is computed before the turn runs: nothing header-related can fail after the model answered.
      const sessionHeader = encodeSessionHeader(sessionKey);
      // Images are files first: saved in the conversation's inbox, and the turn refers to them by path.
      const received =
        input.images.length === 0
          ? undefined
          : await receiveRequestFiles(
              attachments,
              sessionKey,
              input.images.map((image, part) => ({
                url: image.url,
                kind: "image",
                where: `messages[${input.index}] image part ${part + 1}`,
              })),
              signal,
            );
      // What could not be taken is said above the reply, as in the chat apps.
      const notices = attachmentNoticeText(received);
      const turnInput = { inbound, ...(received === undefined ? {} : { attachments: received }) };

      if (!body.stream) {
        reply.header(SESSION_HEADER, sessionHeader);
        const result = await sessions.handle({ ...turnInput, signal });
        if (result.modelMs !== undefined)
          reply.header("server-timing", serverTiming(result.modelMs, reply.elapsedTime));
        return {
          id,
          object: "chat.completion",
          created,
          model,
          choices: [
            {
              index: 0,
              message: { role: "assistant", content: `${notices}${result.text}` },
              finish_reason: "stop",
              logprobs: null,
            },
          ],
          usage: {
            prompt_tokens: result.usage.promptTokens,
            completion_tokens: result.usage.completionTokens,
            total_tokens: result.usage.promptTokens + result.usage.completionTokens,
          },
        };
      }

      // Streaming: headers go out only with the first delta, so errors before it still get a proper status.
      // A stream's headers leave before the model is called: its Server-Timing comes as a trailer.
      const stream = createLazyEventStream(reply, { [SESSION_HEADER]: sessionHeader }, ["server-timing"]);
      const write = (data: unknown) => stream.send(data);
      const chunk = (delta: Record<string, unknown>, finishReason: string | null) => ({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
      });
      let opened = false;
      let sentText = false;
      const send = (text: string) => {
        if (!opened) write(chunk({ role: "assistant", content: "" }, null));
        write(chunk({ content: opened ? text : `${notices}${text}` }, null));
        opened = true;
      };
      try {
        const result = await sessions.handle({
          ...turnInput,
          stream: true,
          signal,
          onTextDelta: (text) => {
            sentText = true;
            send(text);
          },
          // An approval question goes into the stream, so the person sees what the reply waits for.
          notify: async (note) => send(`${note}\n\n`),
        });
        // Commands and non-streamed answers arrive whole: send them as one delta.
        if (!sentText) send(result.text);
        write(chunk({}, "stop"));
        stream.sendRaw("[DONE]");
        stream.end(
          result.modelMs === undefined
            ? undefined
            : { "server-timing": serverTiming(result.modelMs, reply.elapsedTime) },
        );
      } catch (error) {
        if (!stream.started) throw error;
        request.log.error({ err: error }, "streamed turn failed");
        stream.send(streamErrorBody(error));
        stream.sendRaw("[DONE]");
        stream.end();
      }
      return reply;
    },
  );
}

/**
 * The `Server-Timing` header of an answered turn: how long it waited on the model and how long the request had
 * taken, from its arrival, when the answer was ready (in milliseconds). The difference is what the server added.
 */
export function serverTiming(modelMs: number, totalMs: number): string {
  return `model;dur=${modelMs.toFixed(2)};desc="model calls", total;dur=${totalMs.toFixed(2)}`;
}
