import { join } from "node:path";
import { createOpenAITranscriber } from "@almanac/llm";
import fp from "fastify-plugin";
import { AttachmentIntake } from "../attachments/attachment-intake.js";
import { attachmentMaxBytes } from "../config/attachment-max-bytes.js";
import { proxySettingsOf } from "../config/load-config.js";
import { resolveMemoryScope } from "../memory-scope.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Takes the files people send (channels, the API, the console) into their conversation's inbox. */
    attachments: AttachmentIntake;
  }
}

/**
 * The attachment intake: limits, the inbox folders of each scope, vision, and the transcription endpoint when one
 * is configured (its own base URL, key and model; a local whisper server works). Holds nothing to close.
 */
export const attachmentsPlugin = fp(
  async (app) => {
    const { config } = app;
    const { transcription } = config;
    app.decorate(
      "attachments",
      new AttachmentIntake({
        workspace: join(config.home, "workspace"),
        scopeOf: (sessionKey) => resolveMemoryScope(sessionKey, config),
        timeZone: config.memory.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone,
        maxBytes: attachmentMaxBytes(config),
        timeoutMs: config.attachments.timeoutMs,
        vision: config.model.vision,
        ...(transcription.baseUrl === undefined
          ? {}
          : {
              transcriber: createOpenAITranscriber({
                baseURL: transcription.baseUrl,
                apiKey: transcription.apiKey ?? "",
                model: transcription.model,
                proxy: proxySettingsOf(config),
                timeoutMs: config.attachments.timeoutMs,
                maxRetries: 1,
                logger: app.log,
              }),
            }),
        logger: app.log,
      }),
    );
  },
  { name: PLUGIN.attachments, fastify: "5.x", dependencies: [PLUGIN.config] },
);
