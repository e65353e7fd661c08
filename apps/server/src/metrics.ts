import { createRequire } from "node:module";
import type * as Prometheus from "prom-client";

/** A counter as the services count with it. */
export interface MetricCounter<Label extends string> {
  inc(labels: Partial<Record<Label, string | number>>, value?: number): void;
}

/** A histogram as the services observe with it. */
export interface MetricHistogram<Label extends string> {
  observe(labels: Partial<Record<Label, string | number>>, value: number): void;
}

/**
 * Prometheus metrics of one server instance (its own registry, so tests can run several servers). prom-client
 * (~25 ms of CPU to load, with the OpenTelemetry API it loads) is loaded by `start()`, which the server calls
 * once it listens, or by the first count or scrape before that: nothing counted is lost.
 */
export interface ServerMetrics {
  readonly turns: MetricCounter<"channel" | "outcome">;
  readonly turnDuration: MetricHistogram<"channel">;
  readonly modelRequestDuration: MetricHistogram<"model">;
  readonly modelTokens: MetricCounter<"model" | "kind">;
  readonly compactions: MetricCounter<"trigger">;
  readonly toolCalls: MetricCounter<"tool" | "source" | "outcome">;
  readonly toolDuration: MetricHistogram<"source">;
  readonly taskFirings: MetricCounter<"state" | "late">;
  /** Loads prom-client and starts Node's default collectors (event loop lag, GC), when not yet done. */
  start(): void;
  /** The exposition text of every metric, with its content type (`GET /metrics`). */
  scrape(): Promise<{ readonly contentType: string; readonly text: string }>;
}

/** What the gauges are sampled from at scrape time. */
export interface MetricSamples {
  queueDepth: () => number;
  runningTurns: () => number;
  loadedSessions: () => number;
  /** Prompt tokens of each loaded session's next request, as `/status` shows them. */
  contextTokens?: () => readonly number[];
}

/** Creates the metric set; gauges are sampled from the callbacks at scrape time. */
export function createMetrics(sample: MetricSamples): ServerMetrics {
  let prometheus: ReturnType<typeof createPrometheusMetrics> | undefined;
  const loaded = () => {
    prometheus ??= createPrometheusMetrics(
      createRequire(import.meta.url)("prom-client") as typeof Prometheus,
      sample,
    );
    return prometheus;
  };
  return {
    turns: { inc: (labels, value) => loaded().turns.inc(labels, value) },
    turnDuration: { observe: (labels, value) => loaded().turnDuration.observe(labels, value) },
    modelRequestDuration: {
      observe: (labels, value) => loaded().modelRequestDuration.observe(labels, value),
    },
    modelTokens: { inc: (labels, value) => loaded().modelTokens.inc(labels, value) },
    compactions: { inc: (labels, value) => loaded().compactions.inc(labels, value) },
    toolCalls: { inc: (labels, value) => loaded().toolCalls.inc(labels, value) },
    toolDuration: { observe: (labels, value) => loaded().toolDuration.observe(labels, value) },
    taskFirings: { inc: (labels, value) => loaded().taskFirings.inc(labels, value) },
    start: () => {
      loaded();
    },
    scrape: async () => {
      const { registry } = loaded();
      return { contentType: registry.contentType, text: await registry.metrics() };
    },
  };
}

function createPrometheusMetrics(
  { Counter, collectDefaultMetrics, Gauge, Histogram, Registry }: typeof Prometheus,
  sample: MetricSamples,
) {
  const registry = new Registry();
  // prom-client's default names already start with their group (`process_cpu_seconds_total`,
  // `nodejs_heap_size_total_bytes`), so the prefix is only ours: `almanac_process_cpu_seconds_total`.
  // The event-loop lag is sampled every 100 ms instead of prom-client's 10: its timer woke an idle server's
  // loop 100 times a second (~190 epoll waits a second in strace, 160 ms of main-thread CPU per idle 30 s).
  // A stall of 100 ms or more is still always seen; shorter ones are sampled less often.
  collectDefaultMetrics({ register: registry, prefix: "almanac_", eventLoopMonitoringPrecision: 100 });
  return {
    registry,
    turns: new Counter({
      name: "almanac_turns_total",
      help: "Turns handled, by channel and outcome (ok, error, busy, command).",
      labelNames: ["channel", "outcome"],
      registers: [registry],
    }),
    turnDuration: new Histogram({
      name: "almanac_turn_duration_seconds",
      help: "Wall time of a turn from dequeue to reply, including model time.",
      labelNames: ["channel"],
      buckets: [0.005, 0.02, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    modelRequestDuration: new Histogram({
      name: "almanac_model_request_duration_seconds",
      help: "Latency of model calls (including retries).",
      labelNames: ["model"],
      buckets: [0.05, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 120],
      registers: [registry],
    }),
    modelTokens: new Counter({
      name: "almanac_model_tokens_total",
      help: "Tokens reported by the model provider, by kind (prompt, completion).",
      labelNames: ["model", "kind"],
      registers: [registry],
    }),
    queueDepth: new Gauge({
      name: "almanac_session_queue_depth",
      help: "Messages waiting behind busy sessions.",
      registers: [registry],
      collect() {
        this.set(sample.queueDepth());
      },
    }),
    runningTurns: new Gauge({
      name: "almanac_running_turns",
      help: "Turns running right now.",
      registers: [registry],
      collect() {
        this.set(sample.runningTurns());
      },
    }),
    loadedSessions: new Gauge({
      name: "almanac_loaded_sessions",
      help: "Sessions held in memory.",
      registers: [registry],
      collect() {
        this.set(sample.loadedSessions());
      },
    }),
    contextTokensMax: new Gauge({
      name: "almanac_context_tokens_max",
      help: "Largest prompt among loaded sessions: tokens of its next request, the count compaction triggers on.",
      registers: [registry],
      collect() {
        this.set(Math.max(0, ...(sample.contextTokens?.() ?? [])));
      },
    }),
    contextTokensSum: new Gauge({
      name: "almanac_context_tokens_sum",
      help: "Prompt tokens of the next request of every loaded session, summed.",
      registers: [registry],
      collect() {
        this.set((sample.contextTokens?.() ?? []).reduce((sum, tokens) => sum + tokens, 0));
      },
    }),
    compactions: new Counter({
      name: "almanac_compactions_total",
      help: "Context compactions, by trigger (auto, command, overflow).",
      labelNames: ["trigger"],
      registers: [registry],
    }),
    toolCalls: new Counter({
      name: "almanac_tool_calls_total",
      help: "Tool calls run for the model, by tool, source (memory, workspace, web, mcp) and outcome (ok, error).",
      labelNames: ["tool", "source", "outcome"],
      registers: [registry],
    }),
    taskFirings: new Counter({
      name: "almanac_task_firings_total",
      help: "Scheduled task firings entering each state (claimed, answered, delivering, delivered, silent, failed, missed, uncertain), and whether late.",
      labelNames: ["state", "late"],
      registers: [registry],
    }),
    toolDuration: new Histogram({
      name: "almanac_tool_duration_seconds",
      help: "Wall time of tool calls, by source.",
      labelNames: ["source"],
      buckets: [0.005, 0.02, 0.1, 0.5, 1, 2, 5, 10, 30, 60],
      registers: [registry],
    }),
  };
}
