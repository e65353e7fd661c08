import { UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { EventBus, PublishedEvent, RunningTurn } from "../events/event-bus.js";
import { createStatusSampler, type StatusSources } from "../events/status-sampler.js";
import { type EventStream, type EventStreamOptions, openEventStream } from "../http/sse.js";
import type { SessionManager } from "../runtime/session-manager.js";

/** What the live routes need. */
export interface LiveRoutesDependencies {
  readonly bus: EventBus;
  readonly sessions: SessionManager;
  readonly sources: StatusSources;
  /** Defaults: a heartbeat every 15 s, 1 MiB unsent before a client counts as too slow, sampling every 1 s. */
  readonly stream?: Partial<EventStreamOptions>;
  readonly sampleIntervalMs?: number;
}

/** The first event of `GET /api/events`: the state the change events that follow apply to. */
export interface LiveSnapshot {
  readonly type: "snapshot";
  readonly sessions: { readonly loaded: readonly string[]; readonly running: readonly RunningTurn[] };
  readonly queue: unknown;
  readonly index: unknown;
  readonly channels: unknown;
}

const keyParams = z.object({ key: z.string().min(1) });

const stopResponse = {
  200: {
    type: "object",
    required: ["stopped"],
    properties: {
      stopped: {
        type: "boolean",
        description: "True when a running reply was cancelled; false when none was running.",
      },
    },
  },
} as const;

/**
 * `GET /api/events` (server-sent events: a snapshot, then changes of sessions, turns, the summarizer queue,
 * the index and the channels) and `POST /api/sessions/{key}/stop` (cancels a session's running reply).
 * Both need the admin token like every `/api` route. Every open stream ends with a `close` event when the
 * server shuts down.
 */
export function registerLiveRoutes(app: FastifyInstance, deps: LiveRoutesDependencies): void {
  const { bus, sessions } = deps;
  const streamOptions: EventStreamOptions = {
    heartbeatMs: deps.stream?.heartbeatMs ?? 15_000,
    maxBufferedBytes: deps.stream?.maxBufferedBytes ?? 1_048_576,
  };
  const sampler = createStatusSampler({
    bus,
    sources: deps.sources,
    logger: app.log,
    ...(deps.sampleIntervalMs === undefined ? {} : { intervalMs: deps.sampleIntervalMs }),
  });
  const open = new Set<EventStream>();
  app.addHook("preClose", async () => {
    sampler.close();
    for (const stream of open) stream.close("server-shutdown");
  });

  app.get(
    "/api/events",
    {
      schema: {
        tags: ["admin"],
        summary: "Live changes (server-sent events): snapshot, sessions, turns, queue, index, channels",
        description:
          "A `snapshot` event first, then one event per change, each with an increasing `id`. A comment line " +
          "every 15 s keeps proxies from closing the stream. A client that falls more than 1 MiB behind gets a " +
          '`close` event with `reason: "slow-client"` and the stream ends; on shutdown the reason is ' +
          '`"server-shutdown"`. Reconnect to start again from a new snapshot. See docs/api.md.',
        produces: ["text/event-stream"],
      },
    },
    async (request, reply) => {
      // A HEAD (e.g. `curl -I`) gets the headers and ends: there is no body to keep open.
      if (request.method === "HEAD") return reply.type("text/event-stream; charset=utf-8").send();
      reply.hijack();
      const stream = openEventStream(reply.raw, streamOptions);
      // Changes published while the snapshot is read are sent after it, in order.
      let held: PublishedEvent[] | undefined = [];
      const unsubscribe = bus.subscribe((published) => {
        if (held) held.push(published);
        else stream.send(published.event.type, published.event, published.id);
      });
      open.add(stream);
      stream.onClose(() => {
        unsubscribe();
        open.delete(stream);
      });
      try {
        const status = await sampler.sample();
        const snapshot: LiveSnapshot = {
          type: "snapshot",
          sessions: { loaded: sessions.loadedKeys(), running: sessions.runningTurns() },
          ...status,
        };
        stream.send("snapshot", snapshot);
      } catch (error) {
        request.log.error({ err: error }, "could not read the state for the live snapshot");
        stream.close("error");
      }
      const pending = held;
      held = undefined;
      for (const published of pending) stream.send(published.event.type, published.event, published.id);
    },
  );

  app.post(
    "/api/sessions/:key/stop",
    {
      schema: {
        tags: ["admin"],
        summary: "Stop the session's running reply",
        description:
          "Cancels the reply the session is generating (the model request included). The partial reply is " +
          "kept in the history with a `[stopped]` mark; queued messages of the session still run. " +
          "`stopped` is false when no reply was running.",
        params: {
          type: "object",
          required: ["key"],
          properties: { key: { type: "string", description: "The session key, URL-encoded" } },
        },
        response: stopResponse,
      },
    },
    async (request) => {
      const parsed = keyParams.safeParse(request.params);
      if (!parsed.success) throw new UserError("request.invalid", "A session key is required in the path.");
      return { stopped: sessions.stop(parsed.data.key) };
    },
  );
}
