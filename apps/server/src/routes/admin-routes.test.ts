import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChatModel, type ChatResponse, createMessage, type InboundMessage } from "@almanac/core";
import Fastify, { type FastifyInstance } from "fastify";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSessionManager } from "../../test/test-session-manager.js";
import { installErrorHandler } from "../http/http-errors.js";
import type { SessionManager } from "../runtime/session-manager.js";
import { createSessionStore } from "../sessions/session-store.js";
import { registerAdminRoutes, type ServerInfo } from "./admin-routes.js";

/** Answers every turn with the same short reply. */
const model: ChatModel = {
  modelName: "plain",
  contextWindow: 10_000,
  async complete(): Promise<ChatResponse> {
    return {
      message: createMessage({ role: "assistant", content: "Noted." }),
      finishReason: "stop",
      usage: { promptTokens: 10, completionTokens: 2, totalTokens: 12 },
      model: "plain",
      attempts: 1,
    };
  },
  // biome-ignore lint/correctness/useYield: these turns never stream
  async *stream(): AsyncIterable<never> {
    throw new Error("not used");
  },
};

const info = (): ServerInfo => ({
  version: "test",
  startedAt: 0,
  model: { configured: true, name: "plain", missing: [] },
  tokenCounter: "test",
  config: {},
});

function inbound(id: string, text: string): InboundMessage {
  return {
    sessionKey: `web:default:web:${id}`,
    channel: "web",
    id: `${id}-${text}`,
    account: "default",
    conversation: { kind: "web", id },
    sender: { id: "console" },
    mentioned: true,
    text,
    receivedAt: 1_000,
  };
}

let dir: string;
let sessions: SessionManager;
let app: FastifyInstance;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-admin-routes-"));
  sessions = createTestSessionManager({ model, dir });
  app = Fastify();
  installErrorHandler(app);
  registerAdminRoutes(app, sessions, info);
});
afterEach(async () => {
  await app.close();
  sessions.close();
  await rm(dir, { recursive: true, force: true });
});

describe("GET /api/sessions", () => {
  it("gives every session the title of its first message, and null to one stored without a title", async () => {
    await sessions.handle({ inbound: inbound("tides", "How do\n  tides work?") });
    await sessions.handle({ inbound: inbound("tides", "And the sun?") });
    // A session an earlier version stored: a snapshot whose stats have no title.
    const old = createSessionStore({ dir });
    await old.save({
      version: 1,
      key: "web:default:web:old",
      createdAt: 500,
      updatedAt: 600,
      memory: { messages: [], summary: undefined, counters: {} },
      stats: { turns: 1, compactions: 0, lastActivity: 600, channel: "web", messageCount: 2 },
    });
    await old.close();

    const response = await app.inject({ method: "GET", url: "/api/sessions" });
    expect(response.statusCode).toBe(200);
    const body = response.json() as { sessions: Array<{ key: string; title: unknown; turns: number }> };
    expect(body.sessions.map(({ key, title, turns }) => ({ key, title, turns }))).toEqual([
      { key: "web:default:web:tides", title: "How do tides work?", turns: 2 },
      { key: "web:default:web:old", title: null, turns: 1 },
    ]);
  });
});
