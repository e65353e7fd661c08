import { randomUUID } from "node:crypto";
import { UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { SessionManager } from "../runtime/session-manager.js";
import type { StorageStatus } from "../storage-health.js";

/** What `/api/info` and `/readyz` report about the server. */
export interface ServerInfo {
  readonly version: string;
  readonly startedAt: number;
  readonly model: {
    readonly configured: boolean;
    readonly name?: string;
    readonly missing: readonly string[];
  };
  readonly tokenCounter: string;
  /** Whether the data directory takes writes (a full or read-only disk is reported here and in `/readyz`). */
  readonly storage?: StorageStatus;
  readonly config: Record<string, unknown>;
}

const keyParams = z.object({ key: z.string().min(1) });
const compactBody = z.object({ focus: z.string().max(2000).optional() }).optional();

function sessionKeyParam(params: unknown): string {
  const parsed = keyParams.safeParse(params);
  if (!parsed.success) throw new UserError("request.invalid", "A session key is required in the path.");
  return parsed.data.key;
}

/** Admin REST under `/api` (bearer token required by the auth hook). */
export function registerAdminRoutes(
  app: FastifyInstance,
  sessions: SessionManager,
  info: () => ServerInfo,
): void {
  app.get(
    "/api/info",
    { schema: { tags: ["admin"], summary: "Server, model and configuration (secrets masked)" } },
    async () => info(),
  );

  app.get("/api/sessions", { schema: { tags: ["admin"], summary: "List sessions" } }, async () => {
    const list = await sessions.list();
    return {
      sessions: list.map((session) => ({
        key: session.key,
        // Recorded by the session's first turn; null for a session stored before titles were, until its next turn.
        title: session.stats.title ?? null,
        channel: session.stats.channel ?? session.key.split(":")[0],
        createdAt: session.createdAt,
        lastActivity: session.stats.lastActivity,
        messageCount: session.stats.messageCount ?? 0,
        contextTokens: session.stats.contextTokens ?? 0,
        turns: session.stats.turns,
        compactions: session.stats.compactions,
      })),
    };
  });

  app.get(
    "/api/sessions/:key",
    { schema: { tags: ["admin"], summary: "One session: messages, summary, tokens" } },
    async (request) => {
      const key = sessionKeyParam(request.params);
      const detail = await sessions.get(key);
      if (!detail) throw new UserError("session.not_found", `No session ${key}.`);
      return detail;
    },
  );

  app.post(
    "/api/sessions/:key/reset",
    { schema: { tags: ["admin"], summary: "Archive a session and start fresh" } },
    async (request) => {
      const key = sessionKeyParam(request.params);
      if (!(await sessions.reset(key))) throw new UserError("session.not_found", `No session ${key}.`);
      return { key, reset: true };
    },
  );

  app.delete(
    "/api/sessions/:key",
    { schema: { tags: ["admin"], summary: "Delete a session and its transcript" } },
    async (request) => {
      const key = sessionKeyParam(request.params);
      if (!(await sessions.delete(key))) throw new UserError("session.not_found", `No session ${key}.`);
      return { key, deleted: true };
    },
  );

  app.post(
    "/api/sessions/:key/compact",
    { schema: { tags: ["admin"], summary: "Compact a session's context now" } },
    async (request) => {
      const key = sessionKeyParam(request.params);
      const body = compactBody.safeParse(request.body ?? undefined);
      if (!body.success) throw new UserError("request.invalid", 'Body must be {"focus"?: string}.');
      if (!(await sessions.get(key))) throw new UserError("session.not_found", `No session ${key}.`);
      const focus = body.data?.focus;
      const result = await sessions.handle({
        inbound: {
          sessionKey: key,
          channel: "admin",
          id: randomUUID(),
          account: "admin",
          conversation: { kind: "api", id: key },
          mentioned: true,
          sender: { id: "admin" },
          text: focus ? `/compact ${focus}` : "/compact",
          receivedAt: Date.now(),
        },
      });
      return { key, result: result.text };
    },
  );
}
