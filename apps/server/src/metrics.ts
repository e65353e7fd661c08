import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** Prometheus metrics of one server instance (its own registry, so tests can run several servers). */
export interface ServerMetrics {
  readonly registry: Registry;
  readonly turns: Counter<"channel" | "outcome">;
  readonly turnDuration: Histogram<"channel">;
  readonly modelRequestDuration: Histogram<"model">;
  readonly modelTokens: Counter<"model" | "kind">;
  readonly queueDepth: Gauge;
  readonly runningTurns: Gauge;
  readonly loadedSessions: Gauge;
  readonly contextTokensMax: Gauge;
  readonly contextTokensSum: Gauge;
  readonly compactions: Counter<"trigger">;
}

/** Creates the metric set; gauges are sampled from the callbacks at scrape time. */
export function createMetrics(sample: {
  queueDepth: () => number;
  runningTurns: () => number;
  loadedSessions: () => number;
  /** Prompt tokens of each loaded session's next request, as `/status` shows them. */
  contextTokens?: () => readonly number[];
}): ServerMetrics {
  const registry = new Registry();
  // prom-client's default names already start with their group (`process_cpu_seconds_total`,
  // `nodejs_heap_size_total_bytes`), so the prefix is only ours: `almanac_process_cpu_seconds_total`.
  collectDefaultMetrics({ register: registry, prefix: "almanac_" });
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
  };
}
