import { spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { z } from "zod";
import { DEFAULT_STOP_TIMEOUT_MS, STOP_MARGIN_MS } from "../../../scripts/docker/smoke.js";
import { collectOutput } from "./cli-process.js";
import { TEST_MODEL_KEY, TEST_TOKEN } from "./test-server.js";

// The Docker image cannot be built on every machine (no registry, no container engine), but its build stage can:
// this assembles the build context from the Dockerfile's COPY lines and .dockerignore exactly as Docker would,
// runs the stage's build script there (scripts/docker/build-app.sh, with the machine's pnpm store instead of the
// network), and runs the server from the runtime tree it leaves. A file the build needs that the Dockerfile does
// not copy fails here. scripts/docker/smoke.ts builds and runs the real image where podman or Docker is.

const root = fileURLToPath(new URL("../../../", import.meta.url));

/** One Dockerfile instruction, continuation lines joined. */
interface Instruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

/** A build stage: its name (`AS name`) and instructions after its FROM. */
interface Stage {
  readonly name: string;
  readonly from: string;
  readonly instructions: readonly Instruction[];
}

/** The instructions of a Dockerfile (comments, blank lines and line continuations as Docker reads them). */
function parseInstructions(text: string): Instruction[] {
  const instructions: Instruction[] = [];
  let pending = "";
  let startLine = 0;
  text.split("\n").forEach((raw, index) => {
    const line = raw.trimEnd();
    if (/^\s*#/.test(line) || (pending === "" && line.trim() === "")) return;
    if (pending === "") startLine = index + 1;
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    pending += line;
    const match = /^\s*(\S+)\s*([\s\S]*)$/.exec(pending);
    instructions.push({
      keyword: (match?.[1] ?? "").toUpperCase(),
      args: (match?.[2] ?? "").trim(),
      line: startLine,
    });
    pending = "";
  });
  return instructions;
}

/** The stages of a Dockerfile, with `${ARG}` in FROM replaced by the ARG defaults declared before the first FROM. */
function parseStages(text: string): { readonly args: ReadonlyMap<string, string>; readonly stages: Stage[] } {
  const args = new Map<string, string>();
  const stages: { name: string; from: string; instructions: Instruction[] }[] = [];
  for (const instruction of parseInstructions(text)) {
    if (instruction.keyword === "FROM") {
      const [image = "", as, name = ""] = instruction.args.split(/\s+/);
      const from = image.replace(/\$\{(\w+)\}/g, (_match, arg: string) => args.get(arg) ?? "");
      stages.push({
        name: as?.toUpperCase() === "AS" ? name : String(stages.length),
        from,
        instructions: [],
      });
    } else if (stages.length === 0) {
      if (instruction.keyword === "ARG") {
        const [name = "", value = ""] = instruction.args.split("=");
        args.set(name, value);
      }
    } else {
      stages.at(-1)?.instructions.push(instruction);
    }
  }
  return { args, stages };
}

/** A COPY instruction: its flags (`--from=build`) and its sources and destination. */
function parseCopy(instruction: Instruction): {
  readonly flags: ReadonlyMap<string, string>;
  readonly sources: string[];
  readonly destination: string;
} {
  if (instruction.args.startsWith("["))
    throw new Error(`Dockerfile line ${instruction.line}: the JSON form of COPY is not supported here`);
  const words = instruction.args.split(/\s+/);
  const flags = new Map<string, string>();
  while (words[0]?.startsWith("--")) {
    const [flag = "", value = ""] = (words.shift() ?? "").slice(2).split("=");
    flags.set(flag, value);
  }
  const destination = words.pop() ?? "";
  return { flags, sources: words, destination };
}

/** The default of an ARG declared in a stage (or before the first FROM). */
function argDefault(instructions: readonly Instruction[], name: string): string | undefined {
  for (const instruction of instructions) {
    if (instruction.keyword !== "ARG") continue;
    const [arg, value] = instruction.args.split("=");
    if (arg === name) return value;
  }
  return undefined;
}

/**
 * A .dockerignore as Docker applies it: each pattern matches a path or one of its parent directories, `**`
 * spans any number of directories, `*` and `?` stay within one, and the last pattern that matches decides
 * (a `!` pattern lets the path back in).
 */
function createDockerignore(text: string) {
  const patterns = text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const negated = line.startsWith("!");
      const pattern = posix.normalize((negated ? line.slice(1) : line).trim()).replace(/^\/+/, "");
      return { negated, pattern, regex: globRegex(pattern) };
    });
  const matches = (regex: RegExp, path: string): boolean => {
    const parts = path.split("/");
    return parts.some((_part, index) => regex.test(parts.slice(0, index + 1).join("/")));
  };
  return {
    /** True when the path (relative to the context, `/`-separated) is left out of the context. */
    excludes(path: string): boolean {
      let excluded = false;
      for (const { negated, regex } of patterns) if (matches(regex, path)) excluded = !negated;
      return excluded;
    },
    /** True when a `!` pattern may let something inside this excluded directory back in. */
    mayInclude(directory: string): boolean {
      return patterns.some(
        ({ negated, pattern }) => negated && (pattern.startsWith(`${directory}/`) || pattern.includes("**")),
      );
    },
  };
}

/** A Docker (Go filepath.Match plus `**`) pattern as an anchored regular expression. */
function globRegex(pattern: string): RegExp {
  let source = "";
  for (let index = 0; index < pattern.length; index += 1) {
    const char = pattern[index] ?? "";
    if (char === "*" && pattern[index + 1] === "*") {
      index += 1;
      if (pattern[index + 1] === "/") {
        index += 1;
        source += "(?:.*/)?";
      } else source += ".*";
    } else if (char === "*") source += "[^/]*";
    else if (char === "?") source += "[^/]";
    else source += char.replace(/[.+^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${source}$`);
}

/** Every file of the checkout that .dockerignore lets into the build context, relative and `/`-separated. */
function contextFiles(ignore: ReturnType<typeof createDockerignore>): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!ignore.excludes(path) || ignore.mayInclude(path)) walk(path);
      } else if (!ignore.excludes(path)) files.push(path);
    }
  };
  walk("");
  return files;
}

/**
 * Copies into `target` what the build stage's COPY lines take from the context (`target` standing for the
 * stage's WORKDIR), and returns the copied paths. A source that is not in the context fails, as in Docker.
 */
function assembleBuildContext(stage: Stage, files: readonly string[], target: string): string[] {
  const copied: string[] = [];
  const copy = (from: string, to: string): void => {
    mkdirSync(dirname(join(target, to)), { recursive: true });
    copyFileSync(join(root, from), join(target, to));
    copied.push(to);
  };
  for (const instruction of stage.instructions) {
    if (instruction.keyword !== "COPY") continue;
    const { flags, sources, destination } = parseCopy(instruction);
    if (flags.has("from")) continue;
    if (destination.startsWith("/"))
      throw new Error(`Dockerfile line ${instruction.line}: COPY to an absolute path is not supported here`);
    const into = posix.normalize(destination);
    for (const rawSource of sources) {
      const source = posix.normalize(rawSource);
      if (/[*?[]/.test(source))
        throw new Error(`Dockerfile line ${instruction.line}: COPY with a wildcard is not supported here`);
      if (files.includes(source)) {
        const asDirectory = destination.endsWith("/") || sources.length > 1 || into === ".";
        copy(source, asDirectory ? posix.join(into, basename(source)) : into);
        continue;
      }
      const inside = files.filter((file) => file.startsWith(`${source}/`));
      if (inside.length === 0)
        throw new Error(
          `Dockerfile line ${instruction.line}: COPY ${source}: not in the build context (missing, or left out by .dockerignore)`,
        );
      for (const file of inside) copy(file, posix.join(into, file.slice(source.length + 1)));
    }
  }
  return copied;
}

const dockerfile = parseStages(readFileSync(`${root}Dockerfile`, "utf8"));
const buildStage = dockerfile.stages.find((stage) => stage.name === "build");
const runtimeStage = dockerfile.stages.at(-1);
const packageManager = z
  .object({ packageManager: z.string().regex(/^pnpm@\d+\.\d+\.\d+/) })
  .parse(JSON.parse(readFileSync(`${root}package.json`, "utf8"))).packageManager;

/** The value an ENV instruction of the stage sets for a variable (`ENV A=1 B=2` form). */
function envValue(stage: Stage | undefined, name: string): string | undefined {
  for (const instruction of stage?.instructions ?? []) {
    if (instruction.keyword !== "ENV") continue;
    const match = new RegExp(`(?:^|\\s)${name}=(\\S+)`).exec(instruction.args);
    if (match) return match[1];
  }
  return undefined;
}

describe("Dockerfile", () => {
  it("builds on an exactly pinned Node 24 base image in both stages", () => {
    expect(buildStage, "a stage named build").toBeDefined();
    for (const stage of dockerfile.stages)
      expect(stage.from, `stage ${stage.name}`).toMatch(
        /^node:24\.\d+\.\d+(-[a-z]+)*(-slim)?(@sha256:[0-9a-f]{64})?$/,
      );
  });

  it("installs exactly the pnpm of package.json's packageManager", () => {
    const version = argDefault(buildStage?.instructions ?? [], "PNPM_VERSION");
    expect(`pnpm@${version}`).toBe(packageManager.split("+")[0]);
    const install = buildStage?.instructions.find((instruction) => /npm install -g/.test(instruction.args));
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the Dockerfile's own `${ARG}` syntax, not a template.
    expect(install?.args).toContain("pnpm@${PNPM_VERSION}");
  });

  it("builds with scripts/docker/build-app.sh and ships only the runtime tree it assembles, owned by root", () => {
    const runs = buildStage?.instructions.filter((instruction) => instruction.keyword === "RUN") ?? [];
    expect(runs.at(-1)?.args).toBe("sh scripts/docker/build-app.sh /runtime");
    const copies = (runtimeStage?.instructions ?? [])
      .filter((instruction) => instruction.keyword === "COPY")
      .map(parseCopy);
    expect(copies).toHaveLength(1);
    expect(copies[0]?.flags.get("from")).toBe("build");
    expect(copies[0]?.flags.has("chown")).toBe(false);
    expect(copies[0]?.sources).toEqual(["/runtime"]);
    expect(copies[0]?.destination).toBe("/app");
  });

  it("runs as the node user with a shutdown deadline that fits in the default stop timeout", () => {
    const keywords = (runtimeStage?.instructions ?? []).map((instruction) => instruction.keyword);
    const user = runtimeStage?.instructions.find((instruction) => instruction.keyword === "USER");
    expect(user?.args).toBe("node");
    // The code is copied before the switch to the runtime user, /data is made its own.
    expect(keywords.indexOf("COPY")).toBeLessThan(keywords.indexOf("USER"));
    expect(keywords).toContain("HEALTHCHECK");
    expect(envValue(runtimeStage, "ALMANAC_HOME")).toBe("/data");
    const deadline = Number(envValue(runtimeStage, "ALMANAC_SHUTDOWN_DEADLINE_MS"));
    expect(deadline).toBeGreaterThan(0);
    expect(DEFAULT_STOP_TIMEOUT_MS - deadline).toBeGreaterThanOrEqual(STOP_MARGIN_MS);
  });
});

describe("the Docker build stage, on exactly the files the Dockerfile copies", () => {
  let work: string;
  let runtime: string;
  let copied: string[] = [];
  let llm: ScriptedLlm | undefined;

  beforeAll(async () => {
    if (buildStage === undefined) throw new Error("the Dockerfile has no stage named build");
    work = mkdtempSync(join(tmpdir(), "almanac-docker-context-"));
    const context = join(work, "context");
    runtime = join(work, "runtime");
    const ignore = createDockerignore(readFileSync(`${root}.dockerignore`, "utf8"));
    copied = assembleBuildContext(buildStage, contextFiles(ignore), context);

    // pnpm as the image installs it (the packageManager version), over the store this checkout was installed
    // from: every package of the lockfile is there, so the build needs no network, as after the image's `pnpm fetch`.
    const shims = join(work, "bin");
    mkdirSync(shims);
    await writeFile(join(shims, "pnpm"), `#!/bin/sh\nexec npx --yes ${packageManager.split("+")[0]} "$@"\n`);
    chmodSync(join(shims, "pnpm"), 0o755);
    const storeDir = z
      .object({ storeDir: z.string() })
      .parse(parseYaml(readFileSync(`${root}node_modules/.modules.yaml`, "utf8"))).storeDir;
    // pnpm's own global config file (npm, which runs pnpm here through npx, would warn about the variable).
    mkdirSync(join(work, "config", "pnpm"), { recursive: true });
    await writeFile(join(work, "config", "pnpm", "rc"), `store-dir=${storeDir}\n`);
    const build = spawn("sh", ["scripts/docker/build-app.sh", runtime], {
      cwd: context,
      env: {
        // The network settings npx needs if it must fetch that pnpm first; nothing else of this process's
        // environment (a pnpm running the tests sets npm_config_* variables the inner one would read).
        ...Object.fromEntries(
          Object.entries(process.env).filter(([name]) =>
            /^(NODE_EXTRA_CA_CERTS|https?_proxy|no_proxy)$/i.test(name),
          ),
        ),
        PATH: `${shims}:${process.env.PATH ?? ""}`,
        HOME: process.env.HOME ?? work,
        XDG_CONFIG_HOME: join(work, "config"),
        CI: "true",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const result = await collectOutput(build, "scripts/docker/build-app.sh", 280_000);
    if (result.code !== 0)
      throw new Error(`the build stage failed (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }, 300_000);

  afterAll(async () => {
    await llm?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("copies the build's inputs and none of the tests, fixtures or installed packages", () => {
    expect(copied).toEqual(
      expect.arrayContaining([
        "package.json",
        "pnpm-lock.yaml",
        "tsconfig.base.json",
        "apps/console/tsconfig.json",
        "apps/server/src/main.ts",
        "packages/tokenizer/data/o200k_base.ranks",
      ]),
    );
    expect(
      copied.filter((path) => /(^|\/)(node_modules|dist|test|__fixtures__)\/|\.test\.ts$/.test(path)),
    ).toEqual([]);
  });

  it("leaves a runtime tree of the build, the console, the rank tables and production packages only", () => {
    for (const file of [
      "apps/server/dist/main.js",
      "apps/server/dist/memory-index-worker.js",
      "apps/server/package.json",
      "apps/server/bin/almanac.js",
      "apps/console/dist/index.html",
      "packages/tokenizer/data/o200k_base.ranks",
      "packages/tokenizer/data/cl100k_base.ranks",
      "apps/server/node_modules/fastify/package.json",
      "apps/server/node_modules/better-sqlite3/package.json",
    ])
      expect(existsSync(join(runtime, file)), file).toBe(true);

    // Outside node_modules: only what runs (no sources, tests or manifests of the other packages).
    const ours: string[] = [];
    const walk = (relative: string): void => {
      for (const entry of readdirSync(join(runtime, relative), { withFileTypes: true })) {
        const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
        if (entry.name === "node_modules") continue;
        if (entry.isDirectory()) walk(path);
        else ours.push(path);
      }
    };
    walk("");
    const shipped =
      /^(apps\/server\/dist\/|apps\/console\/dist\/|packages\/tokenizer\/data\/|apps\/server\/(package\.json|bin\/almanac\.js|scripts\/build\.mjs)$)/;
    expect(ours.filter((path) => !shipped.test(path))).toEqual([]);

    // TypeScript (a peer of the Qdrant client) and the type packages are not installed.
    const store = readdirSync(join(runtime, "node_modules/.pnpm"));
    expect(store.filter((name) => /^(typescript@|@types\+)/.test(name))).toEqual([]);
    expect(store).toContain("node_modules");
    expect(existsSync(join(runtime, "node_modules/.pnpm/node_modules/typescript"))).toBe(false);
    // Only the server's dependencies: none of the console's (built in) or the tooling's.
    const notShipped =
      /^(preact|marked|dompurify|highlight\.js|uplot|vite|rolldown|tsx|vitest|@biomejs\+biome|knip|fast-check|playwright-core)@/;
    expect(store.filter((name) => notShipped.test(name))).toEqual([]);
  });

  it("runs from the runtime tree: health, console, a chat turn, the almanac command and a clean stop", async () => {
    llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
    const server = spawn(process.execPath, ["--enable-source-maps", "apps/server/dist/main.js", "start"], {
      cwd: runtime,
      env: {
        PATH: process.env.PATH ?? "",
        ALMANAC_HOME: join(work, "data"),
        ALMANAC_HOST: "127.0.0.1",
        ALMANAC_PORT: "0",
        ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
        ALMANAC_MODEL_BASE_URL: llm.baseURL,
        ALMANAC_MODEL_NAME: "scripted-model",
        ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
        ALMANAC_MODEL_MAX_RETRIES: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = collectOutput(server, "the server from the runtime tree", 60_000);
    let output = "";
    server.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the server did not start:\n${output}`)), 30_000);
      server.stdout.on("data", () => {
        const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"almanac listening"/.exec(output);
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
      void exited.then(() => reject(new Error(`the server exited:\n${output}`)));
    });

    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    const consolePage = await fetch(`${url}/`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toBe(
      readFileSync(join(runtime, "apps/console/dist/index.html"), "utf8"),
    );

    // A turn counts tokens (the rank tables) and writes the session through SQLite-backed memory.
    llm.enqueue(script.text("Answered from the image's files."));
    const reply = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "almanac",
        user: "docker",
        messages: [{ role: "user", content: "Hello?" }],
      }),
    });
    expect(reply.status).toBe(200);
    const body = z
      .object({ choices: z.array(z.object({ message: z.object({ content: z.string() }) })) })
      .parse(await reply.json());
    expect(body.choices[0]?.message.content).toBe("Answered from the image's files.");

    // `almanac` as docs/docker.md runs it in a container: the build, with neither sources nor tsx there.
    const cli = spawn(
      process.execPath,
      ["apps/server/bin/almanac.js", "sessions", "list", "--json", "--url", url],
      {
        cwd: runtime,
        env: { PATH: process.env.PATH ?? "", ALMANAC_ADMIN_TOKEN: TEST_TOKEN },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    const listed = await collectOutput(cli, "almanac sessions list", 30_000);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain("api:default:api:docker");

    server.kill("SIGTERM");
    const stopped = await exited;
    expect(stopped.code, stopped.stderr).toBe(0);
  }, 90_000);
});
