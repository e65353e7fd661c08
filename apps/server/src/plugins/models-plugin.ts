import { join } from "node:path";
import type { ChatModel, TokenCounter, Usage } from "@almanac/core";
import { createOpenAIChatModel } from "@almanac/llm";
import { createTokenCounter } from "@almanac/tokenizer";
import fp from "fastify-plugin";
import { createImageResolver } from "../attachments/image-resolver.js";
import { missingModelSettings, proxySettingsOf } from "../config/load-config.js";
import { PLUGIN } from "./plugin-names.js";

/** Told of every model response's token usage (the stats journal records it per day). */
export type UsageListener = (modelName: string, usage: Usage) => void;

/** The language models of the configured endpoint and the one token counter. */
export interface Models {
  /** The model settings still missing (`ALMANAC_MODEL_BASE_URL`, …); chat answers 503 until they are set. */
  readonly missing: readonly string[];
  /** The chat model; absent while settings are missing. */
  readonly chat: ChatModel | undefined;
  readonly tokenCounter: TokenCounter;
  /** The model named `name` on the configured endpoint (the compaction and summarizer models may differ). */
  named(name: string): ChatModel;
  /** Adds a usage listener (for plugins registered after this one). */
  onUsage(listener: UsageListener): void;
}

declare module "fastify" {
  interface FastifyInstance {
    models: Models;
  }
}

/** The chat models (their usage counted in the metrics) and the token counter every service shares. */
export const modelsPlugin = fp(
  async (app) => {
    const { config, metrics } = app;
    const listeners: UsageListener[] = [];
    // Image parts hold references to inbox files; the bytes are read, resized and encoded only for a request.
    const resolveImage = createImageResolver({
      workspace: join(config.home, "workspace"),
      maxSide: config.attachments.imageMaxSide,
      logger: app.log,
    });
    const named = (modelName: string): ChatModel =>
      createOpenAIChatModel({
        baseURL: config.model.baseUrl as string,
        apiKey: config.model.apiKey ?? "",
        model: modelName,
        headers: config.model.headers,
        proxy: proxySettingsOf(config),
        contextWindow: config.model.contextWindow,
        // Every request carries the cap, so prompt + answer never exceed the window.
        maxOutputTokens: config.model.maxOutputTokens,
        outputCapParameter: config.model.outputCapParameter,
        timeoutMs: config.model.timeoutMs,
        maxRetries: config.model.maxRetries,
        // A text-only model never gets an image part: it reads each image's note with the saved path.
        vision: config.model.vision,
        resolveImage,
        logger: app.log,
        onUsage: ({ usage, latencyMs }) => {
          metrics.modelRequestDuration.observe({ model: modelName }, latencyMs / 1000);
          metrics.modelTokens.inc({ model: modelName, kind: "prompt" }, usage.promptTokens);
          metrics.modelTokens.inc({ model: modelName, kind: "completion" }, usage.completionTokens);
          for (const listener of listeners) listener(modelName, usage);
        },
      });
    const missing = missingModelSettings(config);
    if (missing.length > 0) {
      app.log.warn(
        { missing },
        "no model configured: the server runs, chat requests get 503 until these are set",
      );
    }
    app.decorate("models", {
      missing,
      chat: missing.length === 0 ? named(config.model.name as string) : undefined,
      tokenCounter: createTokenCounter(),
      named,
      onUsage: (listener) => {
        listeners.push(listener);
      },
    } satisfies Models);
  },
  { name: PLUGIN.models, fastify: "5.x", dependencies: [PLUGIN.config, PLUGIN.telemetry] },
);
