import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";

// How the index worker's thread is started, from the build or from the sources; what it is given to do is
// the chunk preparer's business (chunk-preparer.ts).

/**
 * The worker's file: this TypeScript source's neighbour, which the server build rewrites to its bundled entry
 * (`memory-index-worker.js` beside the other chunks; apps/server/scripts/build.mjs).
 */
const workerFile = new URL("./index-worker.ts", import.meta.url);
const fromSources = workerFile.pathname.endsWith(".ts");

/**
 * Starts the index worker (the chunk preparer's default) from the build, or from the TypeScript sources through
 * tsx's CommonJS loader.
 */
export function startIndexWorker(): Worker {
  if (!fromSources) return new Worker(workerFile);
  // Under tsx or vitest a worker does not get tsx's hooks (on Node 20, `--import tsx` registers them in the
  // main thread only), so it registers tsx itself before loading the source: tsx's CommonJS `register()`,
  // which compiles in the worker's own thread (~5 ms, its API ~15 ms to load). The ESM one starts a hooks
  // thread of its own and sends every import through it: ~85 ms to load, ~140-175 ms to register, and the
  // worker was ready only after 0.5-0.8 s (now ~0.15-0.25 s). The modules the worker loads are therefore
  // compiled to CommonJS there: no top-level await in them (chunk-preparer.test.ts runs this worker).
  const tsxApi = createRequire(import.meta.url).resolve("tsx/cjs/api");
  const bootstrap = `require(${JSON.stringify(tsxApi)}).register(); require(${JSON.stringify(fileURLToPath(workerFile))});`;
  return new Worker(bootstrap, { eval: true });
}
