import { UserError } from "@almanac/core";
import type { Memory } from "@almanac/memory";
import { localDateOf } from "@almanac/memory-files";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { SessionManager } from "../runtime/session-manager.js";
import type { MemorySampler } from "../stats/memory-sampler.js";
import { lastLocalDates, type StatsJournal } from "../stats/stats-journal.js";

/** What the chart routes read. */
export interface StatsRoutesDependencies {
  readonly sessions: SessionManager;
  readonly memory: Memory;
  readonly journal: StatsJournal;
  readonly memorySampler: MemorySampler;
  readonly clock?: () => number;
}

const keyParams = z.object({ key: z.string().min(1) });
const daysQuery = (fallback: number) =>
  z.object({ days: z.coerce.number().int().min(1).max(366).default(fallback) });

const daysQuerySchema = (fallback: number) =>
  ({
    type: "object",
    properties: {
      days: {
        type: "integer",
        minimum: 1,
        maximum: 366,
        default: fallback,
        description: "How many local days (the memory time zone) to return, today included.",
      },
    },
  }) as const;

const integer = { type: "integer", minimum: 0 } as const;
const dateString = { type: "string", description: "Local date, YYYY-MM-DD (the memory time zone)." } as const;
const queueCounts = {
  type: "object",
  required: ["pending", "running", "parked", "done"],
  properties: { pending: integer, running: integer, parked: integer, done: integer },
} as const;

const contextHistoryResponse = {
  200: {
    type: "object",
    required: ["key", "contextWindow", "contextTokens", "turns", "compactions"],
    properties: {
      key: { type: "string" },
      contextWindow: integer,
      contextTokens: { ...integer, description: "Tokens of the session's next request right now." },
      turns: {
        type: "array",
        description: "Completed turns since the session began or was last reset, oldest first.",
        items: {
          type: "object",
          required: ["turn", "at", "contextTokens", "promptTokens", "completionTokens"],
          properties: {
            turn: integer,
            at: { ...integer, description: "When the turn ended, ms since the epoch." },
            contextTokens: { ...integer, description: "Tokens of the next request after the turn." },
            promptTokens: { ...integer, description: "Prompt tokens the provider reported for the turn." },
            completionTokens: integer,
          },
        },
      },
      compactions: {
        type: "array",
        items: {
          type: "object",
          required: ["at", "reason", "tokensBefore", "tokensAfter"],
          properties: {
            at: integer,
            reason: { type: "string", description: "auto, command (/compact) or overflow" },
            tokensBefore: integer,
            tokensAfter: integer,
            turn: { ...integer, description: "The turn it shaped: the first turn that ended after it." },
          },
        },
      },
    },
  },
} as const;

const tokensResponse = {
  200: {
    type: "object",
    required: ["timeZone", "models", "days"],
    properties: {
      timeZone: { type: "string" },
      models: { type: "array", items: { type: "string" }, description: "Every model in the range." },
      days: {
        type: "array",
        items: {
          type: "object",
          required: ["date", "models"],
          properties: {
            date: dateString,
            models: {
              type: "object",
              additionalProperties: {
                type: "object",
                required: ["promptTokens", "completionTokens", "calls"],
                properties: { promptTokens: integer, completionTokens: integer, calls: integer },
              },
            },
          },
        },
      },
    },
  },
} as const;

const summarizerResponse = {
  200: {
    type: "object",
    required: ["enabled", "timeZone", "current", "days"],
    properties: {
      enabled: { type: "boolean", description: "False when no model is configured (no summarizer)." },
      timeZone: { type: "string" },
      current: queueCounts,
      days: {
        type: "array",
        items: {
          type: "object",
          required: ["date", "enqueued", "done", "parked"],
          properties: {
            date: dateString,
            enqueued: { ...integer, description: "Jobs enqueued that day." },
            done: { ...integer, description: "Jobs finished that day (among the kept done jobs)." },
            parked: { ...integer, description: "Jobs parked now whose last attempt failed that day." },
          },
        },
      },
    },
  },
} as const;

const memoryResponse = {
  200: {
    type: "object",
    required: ["timeZone", "samples"],
    properties: {
      timeZone: { type: "string" },
      samples: {
        type: "array",
        description: "The last sample of each day that has one, oldest first (today: the current index).",
        items: {
          type: "object",
          required: ["date", "at", "files", "chunks"],
          properties: {
            date: dateString,
            at: integer,
            files: integer,
            chunks: integer,
            embeddedChunks: integer,
          },
        },
      },
    },
  },
} as const;

function parseDays(query: unknown, fallback: number): number {
  const parsed = daysQuery(fallback).safeParse(query ?? {});
  if (!parsed.success) throw new UserError("request.invalid", "days must be an integer from 1 to 366.");
  return parsed.data.days;
}

/**
 * The console's chart data under `/api` (bearer token required by the auth hook): a session's context per
 * turn with its compactions, tokens per day per model, summarizer jobs per day, memory files and chunks per day.
 */
export function registerStatsRoutes(app: FastifyInstance, deps: StatsRoutesDependencies): void {
  const { sessions, memory, journal } = deps;
  const clock = deps.clock ?? Date.now;

  app.get(
    "/api/sessions/:key/context-history",
    {
      schema: {
        tags: ["admin"],
        summary: "A session's context tokens per turn, with its compactions",
        params: {
          type: "object",
          required: ["key"],
          properties: { key: { type: "string", description: "The session key, URL-encoded" } },
        },
        response: contextHistoryResponse,
      },
    },
    async (request) => {
      const parsed = keyParams.safeParse(request.params);
      if (!parsed.success) throw new UserError("request.invalid", "A session key is required in the path.");
      const key = parsed.data.key;
      const detail = await sessions.get(key);
      if (!detail) throw new UserError("session.not_found", `No session ${key}.`);
      const history = await journal.sessionHistory(key);
      return {
        key,
        contextWindow: detail.contextWindow,
        contextTokens: detail.contextTokens,
        turns: history.turns.map(({ sessionKey: _key, ...turn }) => turn),
        compactions: history.compactions.map(({ sessionKey: _key, ...compaction }) => {
          const shaped = history.turns.find((turn) => turn.at >= compaction.at);
          return shaped ? { ...compaction, turn: shaped.turn } : compaction;
        }),
      };
    },
  );

  app.get(
    "/api/stats/tokens",
    {
      schema: {
        tags: ["admin"],
        summary: "Tokens per day per model (every model call: chat, compaction, summarizer)",
        querystring: daysQuerySchema(30),
        response: tokensResponse,
      },
    },
    async (request) => {
      const days = await journal.usageByDay(parseDays(request.query, 30));
      const models = [...new Set(days.flatMap((day) => Object.keys(day.models)))].sort();
      return { timeZone: memory.timeZone, models, days };
    },
  );

  app.get(
    "/api/stats/summarizer",
    {
      schema: {
        tags: ["admin"],
        summary: "Summarizer jobs per day: enqueued, done, parked",
        querystring: daysQuerySchema(30),
        response: summarizerResponse,
      },
    },
    async (request) => {
      const count = parseDays(request.query, 30);
      const queue = memory.queue;
      if (!queue) {
        return {
          enabled: false,
          timeZone: memory.timeZone,
          current: { pending: 0, running: 0, parked: 0, done: 0 },
          days: [],
        };
      }
      const [current, jobs] = await Promise.all([queue.stats(), queue.list()]);
      const dates = lastLocalDates(count, clock(), memory.timeZone);
      const rows = new Map(dates.map((date) => [date, { date, enqueued: 0, done: 0, parked: 0 }]));
      const bump = (at: number | undefined, field: "enqueued" | "done" | "parked") => {
        if (at === undefined) return;
        const row = rows.get(localDateOf(at, memory.timeZone));
        if (row) row[field] += 1;
      };
      for (const job of jobs) {
        bump(job.enqueuedAt, "enqueued");
        if (job.state === "done") bump(job.finishedAt ?? job.updatedAt, "done");
        if (job.state === "parked") bump(job.updatedAt, "parked");
      }
      return { enabled: true, timeZone: memory.timeZone, current, days: [...rows.values()] };
    },
  );

  app.get(
    "/api/stats/memory",
    {
      schema: {
        tags: ["admin"],
        summary: "Memory files and chunks per day (a daily sample the server records)",
        querystring: daysQuerySchema(90),
        response: memoryResponse,
      },
    },
    async (request) => {
      const days = parseDays(request.query, 90);
      // Reading the chart records today's state too, so the last point is the index as it is now.
      await deps.memorySampler.sampleNow();
      return { timeZone: memory.timeZone, samples: await journal.memorySamples(days) };
    },
  );
}
