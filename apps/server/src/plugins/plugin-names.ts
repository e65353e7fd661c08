/**
 * The name of every Almanac plugin, in the order `buildApp` registers them. A plugin lists the names it
 * depends on; Fastify refuses to start when one is missing, and closes the plugins in reverse order.
 */
export const PLUGIN = {
  config: "almanac-config",
  http: "almanac-http",
  telemetry: "almanac-telemetry",
  models: "almanac-models",
  memory: "almanac-memory",
  summarizer: "almanac-summarizer",
  consolidation: "almanac-consolidation",
  stats: "almanac-stats",
  tasks: "almanac-tasks",
  tools: "almanac-tools",
  attachments: "almanac-attachments",
  sessions: "almanac-sessions",
  channels: "almanac-channels",
  operationsRoutes: "almanac-operations-routes",
  openAIRoutes: "almanac-openai-routes",
  adminRoutes: "almanac-admin-routes",
  console: "almanac-console",
} as const;
