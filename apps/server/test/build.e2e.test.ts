import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type ScriptedLlm, script, startScriptedLlm } from "@almanac/testkit";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureConsoleBuilt } from "./browser-console.js";
import { TEST_MODEL_KEY, TEST_TOKEN } from "./test-server.js";

const serverDir = fileURLToPath(new URL("..", import.meta.url));
const distMain = join(serverDir, "dist", "main.js");

// Records every module URL the ESM loader resolves into the file named by ALMANAC_TEST_LOADED (loader hooks
// run in their own thread in Node 20+; the file is how they report back).
const HOOKS = `import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  appendFileSync(process.env.ALMANAC_TEST_LOADED, result.url + "\\n");
  return result;
}
`;
const REGISTER = `import { register } from "node:module";
register("./hooks.mjs", import.meta.url);
`;

/**
 * Modules a CLI client command must never load: the server, the channel SDKs, the tokenizer, SQLite, and the
 * Qdrant client (which the server too loads only when Qdrant is configured).
 */
const SERVER_ONLY = [
  "fastify",
  "@qdrant/js-client-rest",
  "discord.js",
  "@larksuiteoapi",
  "dingtalk-stream",
  "gpt-tokenizer",
  "better-sqlite3",
  "openai",
];

let work: string;
let llm: ScriptedLlm;
let server: ChildProcess;
let serverOutput = "";
let url: string;

const loaded = async (file: string) => (await readFile(join(work, file), "utf8")).split("\n").filter(Boolean);
const packagesIn = (urls: readonly string[]) =>
  SERVER_ONLY.filter((name) => urls.some((entry) => entry.includes(`/node_modules/${name}`)));

/** The source files (relative to the repository) bundled into the dist/ chunks among `urls` (chunks.json). */
const bundledModules = async (urls: readonly string[]) => {
  const graph = JSON.parse(await readFile(join(serverDir, "dist", "chunks.json"), "utf8")) as Record<
    string,
    { readonly modules: readonly string[] }
  >;
  const chunks = urls.flatMap((entry) => /\/dist\/([^/]+\.js)$/.exec(entry)?.[1] ?? []);
  return chunks.flatMap((chunk) => graph[chunk]?.modules ?? []);
};

/** `almanac sessions list --json` against the test server through `script`, recording the modules it loads. */
function listSessions(script: string, loadedFile: string, nodeOptions: readonly string[] = []) {
  return spawnSync(
    process.execPath,
    [
      ...nodeOptions,
      "--import",
      join(work, "register.mjs"),
      script,
      "sessions",
      "list",
      "--json",
      "--url",
      url,
    ],
    {
      encoding: "utf8",
      cwd: work,
      env: {
        PATH: process.env.PATH ?? "",
        ALMANAC_TEST_LOADED: join(work, loadedFile),
        ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
      },
    },
  );
}

beforeAll(async () => {
  // Incremental: a current build (e.g. after `pnpm start`) is reused; otherwise this builds (~1-2 s).
  const build = spawnSync(process.execPath, [join(serverDir, "scripts", "build.mjs")], { encoding: "utf8" });
  expect(build.status, build.stderr).toBe(0);
  ensureConsoleBuilt();
  work = await mkdtemp(join(tmpdir(), "almanac-build-"));
  await writeFile(join(work, "hooks.mjs"), HOOKS);
  await writeFile(join(work, "register.mjs"), REGISTER);
  // The client commands run here: their configuration file is read with the YAML parser, which the bundle
  // loads on demand (createRequire from dist/).
  await writeFile(join(work, "almanac.yaml"), "log:\n  level: warn\n");
  llm = await startScriptedLlm({ apiKey: TEST_MODEL_KEY });
  server = spawn(
    process.execPath,
    ["--enable-source-maps", "--import", join(work, "register.mjs"), distMain, "start"],
    {
      env: {
        PATH: process.env.PATH ?? "",
        ALMANAC_TEST_LOADED: join(work, "server-loaded.txt"),
        ALMANAC_HOME: join(work, "home"),
        ALMANAC_PORT: "0",
        ALMANAC_ADMIN_TOKEN: TEST_TOKEN,
        ALMANAC_MODEL_BASE_URL: llm.baseURL,
        ALMANAC_MODEL_NAME: "scripted-model",
        ALMANAC_MODEL_API_KEY: TEST_MODEL_KEY,
        ALMANAC_MODEL_MAX_RETRIES: "0",
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  server.stdout?.on("data", (chunk: Buffer) => {
    serverOutput += chunk.toString();
  });
  server.stderr?.on("data", (chunk: Buffer) => {
    serverOutput += chunk.toString();
  });
  url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the built server did not start:\n${serverOutput}`)),
      20_000,
    );
    server.stdout?.on("data", () => {
      const match = /"url":"(http:\/\/[^"]+)"[^\n]*"msg":"almanac listening"/.exec(serverOutput);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    server.on("exit", () => {
      clearTimeout(timer);
      reject(new Error(`the built server exited:\n${serverOutput}`));
    });
  });
}, 60_000);

afterAll(async () => {
  server?.kill("SIGKILL");
  await llm?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

describe("the production build", () => {
  it("runs the server from dist/ without a TypeScript loader: health, console and a chat turn", async () => {
    const health = await fetch(`${url}/healthz`);
    expect(health.status).toBe(200);
    // The console's files resolve from the bundle's location (a rebased import.meta.url path).
    const consolePage = await fetch(`${url}/`);
    expect(consolePage.status).toBe(200);
    expect(await consolePage.text()).toBe(
      await readFile(join(serverDir, "..", "console", "dist", "index.html"), "utf8"),
    );

    // Before its first model call the server has not loaded the model's SDK client (only its error classes).
    const sdkClient = (entries: readonly string[]) =>
      entries.filter((entry) => /\/node_modules\/openai\/(index|client)\.mjs$/.test(entry));
    expect(sdkClient(await loaded("server-loaded.txt"))).toEqual([]);

    llm.enqueue(script.text("Built and answering."));
    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: TEST_TOKEN, maxRetries: 0 });
    const reply = await client.chat.completions.create({
      model: "almanac",
      user: "build",
      messages: [{ role: "user", content: "Are you compiled?" }],
    });
    expect(reply.choices[0]?.message.content).toBe("Built and answering.");

    const urls = await loaded("server-loaded.txt");
    expect(sdkClient(urls).length).toBeGreaterThan(0);
    expect(urls.some((entry) => entry.endsWith("/dist/main.js"))).toBe(true);
    expect(urls.filter((entry) => entry.endsWith(".ts") || entry.includes("/node_modules/tsx"))).toEqual([]);
    // The turn counted its prompt with the bundled tokenizer (which the client command must not load).
    expect(await bundledModules(urls)).toContain("packages/tokenizer/src/token-counter.ts");
    // No channel and no Qdrant are configured: no channel SDK and no Qdrant client is loaded.
    expect(
      packagesIn(urls).filter(
        (name) => !["fastify", "gpt-tokenizer", "better-sqlite3", "openai"].includes(name),
      ),
    ).toEqual([]);
  }, 30_000);

  it("`almanac sessions list` loads neither the server nor the SDKs, the tokenizer or SQLite", async () => {
    const run = listSessions(distMain, "client-loaded.txt", ["--enable-source-maps"]);
    expect(run.status, run.stderr).toBe(0);
    const listed = JSON.parse(run.stdout) as { sessions: Array<{ key: string }> };
    expect(listed.sessions.map((session) => session.key)).toContain("api:default:api:build");
    const urls = await loaded("client-loaded.txt");
    expect(urls.some((entry) => /\/dist\/sessions-command-[^/]+\.js$/.test(entry))).toBe(true);
    expect(packagesIn(urls)).toEqual([]);
    expect(urls.some((entry) => /\/dist\/start-command-/.test(entry))).toBe(false);
    // Our own tokenizer is bundled in, so it shows in the chunks the command loads, not as a package.
    expect((await bundledModules(urls)).filter((module) => module.startsWith("packages/tokenizer/"))).toEqual(
      [],
    );
  }, 30_000);

  it("bin/almanac.js runs the current build, not the sources", async () => {
    const run = listSessions(join(serverDir, "bin", "almanac.js"), "bin-loaded.txt");
    expect(run.status, run.stderr).toBe(0);
    expect(run.stderr).toBe("");
    expect(JSON.parse(run.stdout)).toHaveProperty("sessions");
    const urls = await loaded("bin-loaded.txt");
    expect(urls.some((entry) => entry.endsWith("/dist/main.js"))).toBe(true);
    expect(urls.filter((entry) => entry.endsWith(".ts") || entry.includes("/node_modules/tsx"))).toEqual([]);
  }, 30_000);
});
