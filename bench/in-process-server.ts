import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { startServer } from "../apps/server/src/server.js";

/** The admin token of the benches' servers. */
export const BENCH_TOKEN = "bench-admin-token-0123456789";

/** A server in this process and the scripted model it calls (see {@link startInProcessServer}). */
export interface InProcessServer {
  /** The scripted model, when it runs in this process (not given a `modelBaseURL`). */
  readonly llm: ScriptedLlm | undefined;
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the scripted model (answering "ok" to anything) and the server from the TypeScript sources in this
 * process, in a fresh home, with 100 turns at once allowed, sessions kept loaded for an hour and the log at
 * `logLevel` thrown away. For the in-process benches (bench/server.ts, bench/allocation.ts). With `modelBaseURL`
 * (a scripted model in its own process, bench/model-process.ts) the server calls that one instead.
 */
export async function startInProcessServer(
  logLevel: "warn" | "info",
  modelBaseURL?: string,
  extraEnv: Readonly<Record<string, string>> = {},
): Promise<InProcessServer> {
  const llm = modelBaseURL === undefined ? await startScriptedLlm({}) : undefined;
  llm?.setFallback(() => script.text("ok"));
  const home = await mkdtemp(join(tmpdir(), "almanac-bench-"));
  const server = await startServer({
    env: {
      ALMANAC_HOME: home,
      ALMANAC_PORT: "0",
      ALMANAC_ADMIN_TOKEN: BENCH_TOKEN,
      ALMANAC_LOG_LEVEL: logLevel,
      ALMANAC_MODEL_BASE_URL: llm?.baseURL ?? modelBaseURL ?? "",
      ALMANAC_MODEL_NAME: "scripted-model",
      ALMANAC_MODEL_MAX_RETRIES: "0",
      ALMANAC_MAX_CONCURRENT_TURNS: "100",
      ALMANAC_SESSION_IDLE_UNLOAD_MS: "3600000",
      ...extraEnv,
    },
    cwd: home,
    logDestination: new Writable({ write: (_chunk, _encoding, callback) => callback() }),
    announce: () => {},
  });
  return {
    llm,
    url: server.url,
    async close() {
      await server.close();
      await llm?.close();
      await rm(home, { recursive: true, force: true });
    },
  };
}
