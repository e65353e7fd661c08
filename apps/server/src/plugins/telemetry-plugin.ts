import fp from "fastify-plugin";
import { createEventBus, type EventBus } from "../events/event-bus.js";
import { createMetrics, type ServerMetrics } from "../metrics.js";
import { aTurnAfterReady } from "./after-ready.js";
import { PLUGIN } from "./plugin-names.js";

declare module "fastify" {
  interface FastifyInstance {
    /** Prometheus metrics (`GET /metrics`). */
    metrics: ServerMetrics;
    /** Changes for the live console (`GET /api/events`); publishing costs nothing while no console listens. */
    events: EventBus;
  }
}

/**
 * Metrics and the live event bus: registered before the services that report to them. The session gauges
 * are read at scrape time from the sessions plugin, registered later (0 until it is).
 */
export const telemetryPlugin = fp(
  async (app) => {
    app.decorate(
      "events",
      createEventBus({
        onListenerError: (error) => app.log.warn({ err: error }, "a live event listener failed"),
      }),
    );
    const sessions = () => (app.hasDecorator("sessions") ? app.sessions : undefined);
    const lanes = () => (app.hasDecorator("laneScheduler") ? app.laneScheduler.stats() : undefined);
    const metrics = createMetrics({
      queueDepth: () => lanes()?.queued ?? 0,
      runningTurns: () => lanes()?.running ?? 0,
      loadedSessions: () => sessions()?.loadedCount() ?? 0,
      contextTokens: () => sessions()?.loadedContextTokens() ?? [],
    });
    app.decorate("metrics", metrics);
    // prom-client loads once the server listens, not before the first answer; a count or a scrape before that
    // loads it at once.
    void aTurnAfterReady(app).then(() => metrics.start());
  },
  { name: PLUGIN.telemetry, fastify: "5.x", dependencies: [PLUGIN.config] },
);
