/**
 * Builds the real Docker image with podman or Docker and checks it as an operator would meet it (docs/docker.md,
 * "Smoke test"): the image's files and user, start-up and /healthz, the image's health check, the console, a
 * chat turn against the test kit's scripted model, the data kept across `rm` and a new container on the same
 * volume, a 20 s turn stopped with the engine's default stop timeout (the client gets an answer, exit code 0),
 * and the one-line error of a root-owned bind mount on /data. Prints the figures; exits 0 with
 * "skipped: no podman or docker" where neither answers.
 *
 * Run: node --import tsx scripts/docker/smoke.ts [--no-build]   (Linux: the container shares the host's network
 * to reach the scripted model on 127.0.0.1.) `--no-build` checks the image already tagged.
 * Environment, all optional:
 *   ALMANAC_SMOKE_ENGINE      podman or docker (default: the first of them whose `info` answers)
 *   ALMANAC_SMOKE_TAG         the image's tag (default almanac:smoke)
 *   ALMANAC_SMOKE_BASE_IMAGE  build on this image instead of the Dockerfile's pinned NODE_IMAGE
 *   ALMANAC_SMOKE_CA_FILE     a CA bundle the build trusts (mounted read-only into RUN steps; podman only), for
 *                             a network whose TLS is intercepted
 *   ALMANAC_SMOKE_NODEDIR     npm_config_nodedir for the build (/usr/local: compile native modules against the
 *                             image's own Node headers when they cannot be downloaded)
 */
import { chmodSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { script, startScriptedLlm } from "@almanac/testkit";
import {
  check,
  engineRun,
  engineRunToEnd,
  field,
  findEngine,
  freePort,
  noHealthTimers,
  SmokeContainers,
  strings,
} from "./smoke-containers.js";

/** How long `docker stop` and `podman stop` wait between SIGTERM and SIGKILL when not told otherwise. */
export const DEFAULT_STOP_TIMEOUT_MS = 10_000;
/**
 * What a stop timeout must leave after the shutdown deadline: the cut turns answer, then sessions, jobs and the
 * index are flushed (measured here well under a second). The Dockerfile's and the compose file's tests hold
 * their deadlines to it too.
 */
export const STOP_MARGIN_MS = 2_000;

const root = fileURLToPath(new URL("../../", import.meta.url));
const tag = process.env.ALMANAC_SMOKE_TAG ?? "almanac:smoke";
/** The slow turn: longer than the image's shutdown deadline, so the stop has to cut it short. */
const SLOW_TURN_MS = 20_000;

const say = (line: string): void => console.log(`smoke: ${line}`);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const megabytes = (bytes: number): string => `${Math.round(bytes / 1_000_000)} MB`;

/** Builds the image from the repository; resolves with the build's duration. */
async function buildImage(engine: string): Promise<number> {
  const args = ["build", "-t", tag];
  // podman writes OCI images by default, which have no HEALTHCHECK; the Docker format keeps it.
  if (engine === "podman") args.push("--format", "docker");
  if (process.env.ALMANAC_SMOKE_BASE_IMAGE)
    args.push("--build-arg", `NODE_IMAGE=${process.env.ALMANAC_SMOKE_BASE_IMAGE}`);
  if (process.env.ALMANAC_SMOKE_CA_FILE) {
    check(
      engine === "podman",
      "ALMANAC_SMOKE_CA_FILE needs podman: docker build cannot mount a file into RUN steps",
    );
    args.push(
      "-v",
      `${process.env.ALMANAC_SMOKE_CA_FILE}:/run/almanac-build-ca.crt:ro`,
      "--build-arg",
      "NODE_EXTRA_CA_CERTS=/run/almanac-build-ca.crt",
    );
  }
  if (process.env.ALMANAC_SMOKE_NODEDIR)
    args.push("--build-arg", `npm_config_nodedir=${process.env.ALMANAC_SMOKE_NODEDIR}`);
  args.push(root);
  say(`building: ${engine} ${args.join(" ")}`);
  const started = Date.now();
  const build = await engineRunToEnd(engine, args);
  const output = `${build.stdout}${build.stderr}`.split("\n").slice(-40).join("\n");
  check(build.code === 0, `the build failed (exit ${build.code}):\n${output}`);
  return Date.now() - started;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Walks /app and /data inside the image as its runtime user (the image's own node; the result as JSON). */
const FILES_CHECK = `
const { accessSync, constants, readdirSync } = require("node:fs");
const writable = [], typePackages = [], sources = [];
const walk = (dir) => {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = dir + "/" + entry.name;
    try { accessSync(path, constants.W_OK); writable.push(path); } catch {}
    if (entry.isSymbolicLink()) continue;
    if (/node_modules\\/(typescript|@types)$/.test(path) || /\\.pnpm\\/(typescript@|@types\\+)/.test(path)) typePackages.push(path);
    if (!path.includes("/node_modules/") && /(\\.ts|\\.test\\.[cm]?js)$/.test(path)) sources.push(path);
    if (entry.isDirectory()) walk(path);
  }
};
walk("/app");
let data = false;
try { accessSync("/data", constants.W_OK); data = true; } catch {}
console.log(JSON.stringify({ uid: process.getuid(), writable: writable.slice(0, 5), typePackages: typePackages.slice(0, 5), sources: sources.slice(0, 5), data }));
`;

/** What the image declares, and what it holds. Resolves with its size, shutdown deadline and health check. */
async function checkImage(
  engine: string,
): Promise<{ readonly sizeBytes: number; readonly deadlineMs: number; readonly healthcheck: string[] }> {
  const inspect: unknown = JSON.parse(await engineRun(engine, ["image", "inspect", tag]));
  const config = field(inspect, 0, "Config");
  const deadlineMs = Number(
    strings(field(config, "Env"))
      .find((entry) => entry.startsWith("ALMANAC_SHUTDOWN_DEADLINE_MS="))
      ?.split("=")[1],
  );
  // Docker reports the health check in the image's Config, podman beside it.
  const healthcheck = strings(
    field(config, "Healthcheck", "Test") ?? field(inspect, 0, "Healthcheck", "Test"),
  );
  check(field(config, "User") === "node", `the image runs as ${String(field(config, "User"))}, not node`);
  check(healthcheck[0] === "CMD", "the image has no HEALTHCHECK (podman: build with --format docker)");
  check(
    deadlineMs > 0 && deadlineMs + STOP_MARGIN_MS <= DEFAULT_STOP_TIMEOUT_MS,
    `ALMANAC_SHUTDOWN_DEADLINE_MS=${deadlineMs} leaves less than ${seconds(STOP_MARGIN_MS)} of the default stop timeout`,
  );

  const files: unknown = JSON.parse(
    await engineRun(engine, [
      "run",
      "--rm",
      ...noHealthTimers(engine),
      "--entrypoint",
      "node",
      tag,
      "-e",
      FILES_CHECK,
    ]),
  );
  check(field(files, "uid") === 1000, `the runtime user is uid ${String(field(files, "uid"))}, not 1000`);
  const found = (name: string): string[] => strings(field(files, name));
  check(found("writable").length === 0, `the runtime user can write ${found("writable").join(", ")}`);
  check(
    found("typePackages").length === 0,
    `TypeScript or type packages: ${found("typePackages").join(", ")}`,
  );
  check(found("sources").length === 0, `sources or tests: ${found("sources").join(", ")}`);
  check(field(files, "data") === true, "the runtime user cannot write the image's /data");
  return { sizeBytes: Number(field(inspect, 0, "Size")), deadlineMs, healthcheck };
}

async function main(): Promise<void> {
  const engine = await findEngine();
  if (engine === undefined) {
    say("skipped: no podman or docker (neither answers `info`)");
    return;
  }
  const figures: string[] = [];
  if (!process.argv.includes("--no-build")) {
    const buildMs = await buildImage(engine);
    figures.push(`build ${seconds(buildMs)}`);
    say(`built ${tag} in ${seconds(buildMs)}`);
  }

  // 1. The image: its user, health check and deadline; /app not writable, no TypeScript, sources or tests.
  const image = await checkImage(engine);
  figures.push(`image ${megabytes(image.sizeBytes)}`);
  say(
    `image ${tag}: ${megabytes(image.sizeBytes)}, user node (uid 1000) who cannot write /app, deadline ${image.deadlineMs} ms; no TypeScript, @types, sources or tests`,
  );

  const llm = await startScriptedLlm();
  const containers = new SmokeContainers(engine, tag, await freePort(), llm.baseURL);
  const bindDirectory = mkdtempSync(join(tmpdir(), "almanac-smoke-bind-"));
  try {
    await containers.createVolume();

    // 2. Start, health, the image's own health check, the console, a chat turn.
    const first = await containers.start("1");
    figures.push(`/healthz ${seconds(first.healthMs)} after run`);
    say(`started: /healthz answered ${seconds(first.healthMs)} after \`${engine} run\``);
    await containers.exec(first.name, image.healthcheck.slice(1));
    const page = await fetch(`${containers.url}/`);
    check(
      page.status === 200 && (await page.text()).includes('id="app"'),
      `the console answered ${page.status}`,
    );
    const token = await containers.exec(first.name, ["cat", "/data/admin-token"]);
    check(token.length >= 16, "no admin token in /data/admin-token");
    llm.enqueue(script.text("Hello from the scripted model."));
    const reply = await containers.chat(token, "smoke", "Hello?");
    check(
      reply.status === 200 &&
        field(reply.body, "choices", 0, "message", "content") === "Hello from the scripted model.",
      `the chat turn answered ${reply.status}: ${JSON.stringify(reply.body)}`,
    );
    say("health check, console and a chat turn: ok");

    // 3. The data outlives the container: a new one on the same volume has the token and the conversation.
    const idleStop = await containers.stop(first.name);
    check(idleStop.exitCode === 0, `the idle stop exited ${idleStop.exitCode}`);
    await containers.remove(first.name);
    const second = await containers.start("2");
    const session = await fetch(
      `${containers.url}/api/sessions/${encodeURIComponent("api:default:api:smoke")}`,
      {
        headers: { authorization: `Bearer ${token}` },
      },
    );
    const sessionText = await session.text();
    check(
      session.status === 200 && sessionText.includes("Hello from the scripted model."),
      `after rm and a new container the session answered ${session.status}: ${sessionText.slice(0, 300)}`,
    );
    say(
      `data kept: idle stop ${seconds(idleStop.ms)} (exit 0), rm, a new container has the token and the conversation`,
    );

    // 4. A 20 s turn and `stop` with the default timeout: the server cuts the turn at its deadline, answers the
    // client, flushes and exits 0 before the engine would kill it.
    llm.enqueue(script.text("This reply comes too late.", { delayMs: SLOW_TURN_MS }));
    const before = llm.chatRequests().length;
    const turnStarted = Date.now();
    const slow = containers.chat(token, "smoke-slow", "Take your time.");
    while (llm.chatRequests().length === before) {
      check(Date.now() - turnStarted < 30_000, "the slow turn never reached the model");
      await sleep(25);
    }
    const slowStop = await containers.stop(second.name);
    const answer = await slow;
    const code = field(answer.body, "error", "code");
    check(
      slowStop.exitCode === 0,
      `stopping during a turn exited ${slowStop.exitCode} after ${seconds(slowStop.ms)}`,
    );
    check(
      answer.status === 503 && code === "server.shutting_down",
      `the client of the cut turn got ${answer.status}: ${JSON.stringify(answer.body)}`,
    );
    figures.push(`stop of a ${SLOW_TURN_MS / 1000} s turn ${seconds(slowStop.ms)}, exit 0`);
    say(
      `stop during a ${SLOW_TURN_MS / 1000} s turn: ${seconds(slowStop.ms)} (default timeout ${seconds(DEFAULT_STOP_TIMEOUT_MS)}), exit 0; the client got 503 ${String(code)} after ${seconds(answer.ms)}`,
    );

    // 5. A host directory the runtime user cannot write: one line saying what to do, no stack.
    chmodSync(bindDirectory, 0o755);
    const refused = await containers.runOnDirectory("3", bindDirectory);
    const lines = refused.stderr.split("\n").filter((line) => line.trim() !== "");
    check(refused.code !== 0, "the container started on a root-owned /data");
    check(
      lines.length === 1 && !/^\s+at /m.test(refused.stderr) && lines[0]?.includes("/data") === true,
      `a root-owned /data should give one line naming /data, got (exit ${refused.code}):\n${refused.stderr}${refused.stdout}`,
    );
    say(`root-owned bind mount: exit ${refused.code}, "${lines[0]}"`);

    say(`passed (${figures.join(", ")})`);
  } finally {
    await containers.close();
    rmSync(bindDirectory, { recursive: true, force: true });
    await llm.close();
  }
}

// Run as a program; imported (by the tests, for the stop-timeout rule) it only declares.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    console.error(`smoke: FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
