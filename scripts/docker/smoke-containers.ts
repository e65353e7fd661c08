/**
 * The container engine side of scripts/docker/smoke.ts: running podman or Docker, and the containers of one smoke
 * run (one volume, the host's network, the test kit's scripted model on the host).
 */
import { execFile, spawn } from "node:child_process";
import { createServer } from "node:net";
import { promisify } from "node:util";

const run = promisify(execFile);

/** A failed check: the message says what was expected and what happened. */
export class SmokeFailure extends Error {
  override readonly name = "SmokeFailure";
}

/** Fails the smoke run with the message unless the condition holds. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new SmokeFailure(message);
}

/** A property of a parsed JSON value, or undefined (the engine's and the server's answers are untrusted here). */
export function field(value: unknown, ...path: (string | number)[]): unknown {
  let current = value;
  for (const key of path) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string | number, unknown>)[key];
  }
  return current;
}

/** A parsed JSON value as a list of strings ([] when it is not one). */
export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
}

/** Runs a container engine command; rejects with its output when it fails. */
export async function engineRun(
  engine: string,
  args: readonly string[],
  timeoutMs = 60_000,
): Promise<string> {
  try {
    const { stdout } = await run(engine, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
    return stdout.trim();
  } catch (error) {
    const stderr = field(error, "stderr");
    throw new SmokeFailure(
      `${engine} ${args.join(" ")} failed: ${(typeof stderr === "string" ? stderr.trim() : "") || String(error)}`,
    );
  }
}

/** Runs a container engine command to its end; resolves with its exit code and output (no timeout kill). */
export function engineRunToEnd(
  engine: string,
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(engine, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The first engine whose `info` answers (a docker CLI without a daemon does not count). */
export async function findEngine(): Promise<string | undefined> {
  const wanted = process.env.ALMANAC_SMOKE_ENGINE;
  for (const engine of wanted ? [wanted] : ["podman", "docker"]) {
    try {
      await run(engine, ["info"], { timeout: 30_000 });
      return engine;
    } catch {
      // not installed, or no daemon: try the next
    }
  }
  return undefined;
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === "object" && address !== null ? address.port : 0;
}

/** Polls `/healthz` until it answers 200; resolves with the time it took from `since`. */
export async function waitForHealth(url: string, since: number, timeoutMs = 60_000): Promise<number> {
  while (Date.now() - since < timeoutMs) {
    try {
      if ((await fetch(`${url}/healthz`)).status === 200) return Date.now() - since;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new SmokeFailure(`/healthz did not answer within ${timeoutMs / 1000} s`);
}

/** podman's health-check timers need systemd, which a container host may not run; the check is run by hand. */
export const noHealthTimers = (engine: string): string[] => (engine === "podman" ? ["--no-healthcheck"] : []);

/** A chat turn's answer as the client saw it. */
export interface ChatAnswer {
  readonly status: number;
  readonly body: unknown;
  readonly ms: number;
}

/**
 * The containers of one smoke run: all on one volume and one loopback port of the host's network, the model
 * being the test kit's scripted one on the host. `close()` removes the containers and the volume.
 */
export class SmokeContainers {
  readonly url: string;
  readonly #engine: string;
  readonly #image: string;
  readonly #modelUrl: string;
  readonly #port: number;
  readonly #volume = `almanac-smoke-${process.pid}`;
  readonly #names: string[] = [];

  constructor(engine: string, image: string, port: number, modelUrl: string) {
    this.#engine = engine;
    this.#image = image;
    this.#port = port;
    this.#modelUrl = modelUrl;
    this.url = `http://127.0.0.1:${port}`;
  }

  /** A new container name of this run (removed by `close()`). */
  #name(label: string): string {
    const name = `almanac-smoke-${process.pid}-${label}`;
    this.#names.push(name);
    return name;
  }

  async createVolume(): Promise<void> {
    await engineRun(this.#engine, ["volume", "create", this.#volume]);
  }

  /** The `run` arguments every container of the run shares: the host's network, the port, the model. */
  #runArguments(name: string, data: string, detached: boolean): string[] {
    return [
      "run",
      ...(detached ? ["-d"] : []),
      "--name",
      name,
      ...noHealthTimers(this.#engine),
      "--network",
      "host",
      "-v",
      `${data}:/data`,
      "-e",
      "ALMANAC_HOST=127.0.0.1",
      "-e",
      `ALMANAC_PORT=${this.#port}`,
      "-e",
      `ALMANAC_MODEL_BASE_URL=${this.#modelUrl}`,
      "-e",
      "ALMANAC_MODEL_NAME=scripted-model",
      "-e",
      "ALMANAC_MODEL_MAX_RETRIES=0",
    ];
  }

  /** Starts a container on the volume; resolves once /healthz answers, with the time from `run` to then. */
  async start(label: string): Promise<{ readonly name: string; readonly healthMs: number }> {
    const name = this.#name(label);
    const started = Date.now();
    await engineRun(this.#engine, [...this.#runArguments(name, this.#volume, true), this.#image]);
    try {
      return { name, healthMs: await waitForHealth(this.url, started) };
    } catch (error) {
      const logs = await engineRun(this.#engine, ["logs", name]).catch(() => "");
      throw new SmokeFailure(
        `${error instanceof Error ? error.message : String(error)}; logs of ${name}:\n${logs}`,
      );
    }
  }

  /** Runs a container on a host directory to its end (it is expected to refuse to start). */
  runOnDirectory(
    label: string,
    directory: string,
  ): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return engineRunToEnd(this.#engine, [
      ...this.#runArguments(this.#name(label), directory, false),
      this.#image,
    ]);
  }

  /** Runs a command in a running container; resolves with its output. */
  exec(name: string, command: readonly string[]): Promise<string> {
    return engineRun(this.#engine, ["exec", name, ...command]);
  }

  /** `stop` with the engine's default timeout; resolves with how long it took and the exit code. */
  async stop(name: string): Promise<{ readonly ms: number; readonly exitCode: number }> {
    const started = Date.now();
    await engineRun(this.#engine, ["stop", name]);
    const ms = Date.now() - started;
    const exitCode = Number(
      await engineRun(this.#engine, ["inspect", "--format", "{{.State.ExitCode}}", name]),
    );
    return { ms, exitCode };
  }

  async remove(name: string): Promise<void> {
    await engineRun(this.#engine, ["rm", name]);
  }

  /** One chat turn through the OpenAI-compatible endpoint. */
  async chat(token: string, user: string, content: string): Promise<ChatAnswer> {
    const started = Date.now();
    const response = await fetch(`${this.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "almanac", user, messages: [{ role: "user", content }] }),
    });
    const body: unknown = await response.json();
    return { status: response.status, body, ms: Date.now() - started };
  }

  async close(): Promise<void> {
    for (const name of this.#names) await engineRun(this.#engine, ["rm", "-f", name]).catch(() => "");
    await engineRun(this.#engine, ["volume", "rm", "-f", this.#volume]).catch(() => "");
  }
}
