#!/usr/bin/env node
// Builds the server and CLI into apps/server/dist (see docs/build.md): one ESM bundle from src/main.ts made
// with Rolldown, with source maps, the workspace packages (@almanac/*) and zod inlined, every other
// third-party package left external (native modules such as better-sqlite3 must stay in node_modules), and code
// splitting so each command loads only the chunks its dynamic `import()`s reach: the CLI's client commands
// never load fastify, the channel SDKs, the tokenizer or SQLite.
//
// Incremental: dist/build-info.json lists every source file of the last build; when none is newer than that
// build (and none is gone), the build is skipped. `--force` rebuilds anyway. Plain JavaScript on purpose: it
// runs without a TypeScript loader, in a fraction of a second when nothing changed.
import { existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const serverDir = fileURLToPath(new URL("..", import.meta.url));
const repoRoot = resolve(serverDir, "../..");
const outdir = resolve(serverDir, "dist");
const infoFile = resolve(outdir, "build-info.json");
const entry = resolve(serverDir, "src/main.ts");
// Worker threads' entry files, each bundled as its own entry `<name>.js` beside main.js; the code that starts
// one names its source (`new URL("./index-worker.ts", import.meta.url)`), which the build points at the bundle.
const workerEntries = {
  "memory-index-worker": resolve(repoRoot, "packages/memory-index/src/index-worker.ts"),
};
const workerNames = new Map(Object.entries(workerEntries).map(([name, file]) => [file, name]));
// Besides the bundled sources, a change to these means the output may differ.
const buildFiles = [fileURLToPath(import.meta.url), resolve(serverDir, "package.json")];

/** Why the last build is out of date, or undefined when it is current. */
export function staleReason() {
  if (!existsSync(infoFile)) return "no build yet";
  let info;
  try {
    info = JSON.parse(readFileSync(infoFile, "utf8"));
  } catch {
    return "build-info.json unreadable";
  }
  if (typeof info?.startedAt !== "number" || !Array.isArray(info.inputs)) return "build-info.json malformed";
  for (const file of [...info.inputs.map((input) => resolve(repoRoot, input)), ...buildFiles]) {
    let modified;
    try {
      modified = statSync(file).mtimeMs;
    } catch {
      return `${relative(repoRoot, file)} is gone`;
    }
    if (modified >= info.startedAt) return `${relative(repoRoot, file)} changed`;
  }
  return undefined;
}

/**
 * Rewrites `new URL("<relative>", import.meta.url)` in a bundled source file so the path still points at the
 * same place when the code runs from dist/ (the console's dist folder, package.json, fixture folders), and a
 * worker's source file at its bundled entry (see `workerEntries`). Any
 * other use of `import.meta` outside the entry point (but `createRequire(import.meta.url)`, whose packages
 * resolve from apps/server's dependencies) fails the build: its meaning changes with bundling.
 */
function rebaseImportMetaUrl(source, file) {
  const rebased = source.replace(
    /new URL\(\s*(["'])([^"']+)\1\s*,\s*import\.meta\.url\s*\)/g,
    (_match, _quote, target) => {
      const absolute = resolve(dirname(file), target);
      const worker = workerNames.get(absolute);
      if (worker !== undefined) return `new URL(${JSON.stringify(`./${worker}.js`)}, import.meta.url)`;
      let fromDist = relative(outdir, absolute).split("\\").join("/");
      if (target.endsWith("/") && !fromDist.endsWith("/")) fromDist += "/";
      if (!fromDist.startsWith(".")) fromDist = `./${fromDist}`;
      return `new URL(${JSON.stringify(fromDist)}, import.meta.url)`;
    },
  );
  // createRequire(import.meta.url) resolves from dist/ instead: fine for packages apps/server depends on.
  const rest = rebased.replace(
    /new URL\("[^"]+", import\.meta\.url\)|createRequire\(import\.meta\.url\)/g,
    "",
  );
  if (file !== entry && !workerNames.has(file) && /import\.meta\.(url|dirname|filename)/.test(rest)) {
    throw new Error(
      `${relative(repoRoot, file)}: import.meta used other than as new URL("<relative path>", import.meta.url); the build cannot keep its meaning`,
    );
  }
  return rebased;
}

/**
 * Third-party packages bundled like our own code instead of loaded from node_modules at run time. zod: its ESM
 * build is 97 modules (~860 KB, 64 of them locales no command uses) that Node resolved, read and compiled one
 * by one at every start and every CLI command; bundled, only what is used remains. Pure ESM without native
 * parts or files of its own, and every import of it is ours, so no second copy meets our schemas.
 */
const BUNDLED_PACKAGES = new Set(["zod"]);

/**
 * The bundler plugin: workspace packages (@almanac/*) bundled from their TypeScript sources, every other bare
 * import left external (resolved from apps/server/node_modules at run time, so each must be a dependency of
 * apps/server: checked after the build), `new URL(…, import.meta.url)` rebased to dist/.
 */
const almanacPlugin = {
  name: "almanac",
  resolveId(source) {
    if (/^[./]/.test(source) || source.startsWith("@almanac/") || /^[A-Za-z]:[\\/]/.test(source)) return null;
    if (BUNDLED_PACKAGES.has(packageName(source))) return null;
    return { id: source, external: true };
  },
  transform(code, id) {
    if (!id.endsWith(".ts") || !code.includes("import.meta")) return null;
    return { code: rebaseImportMetaUrl(code, id), map: null };
  },
};

/** The package name of a bare import (`@scope/name/sub` → `@scope/name`). */
const packageName = (specifier) =>
  specifier
    .split("/")
    .slice(0, specifier.startsWith("@") ? 2 : 1)
    .join("/");

/** Builds dist/ unless it is current; returns what it did. */
export async function buildServer({ force = false } = {}) {
  const reason = force ? "forced" : staleReason();
  if (reason === undefined) return { built: false };
  const startedAt = Date.now();
  // Rolldown rather than esbuild: with code splitting esbuild ignores "side-effect free" hints
  // (evanw/esbuild#1110), so importing one error class from @almanac/core put the whole package, and with it
  // gpt-tokenizer's o200k table (~450 ms to load here), into the chunk every CLI command loads. Rolldown
  // splits by what is used: `almanac sessions list` loads only the CLI, the config loader and zod.
  const { rolldown } = await import("rolldown");
  const bundle = await rolldown({
    input: { main: entry, ...workerEntries },
    cwd: repoRoot,
    platform: "node",
    plugins: [almanacPlugin],
    resolve: { extensionAlias: { ".js": [".ts", ".js"] } },
    transform: { target: "node20" },
    // The modules of @almanac/core, durable-write, openai-wire and tokenizer only declare (audited; no
    // top-level effects but on their own module-local tables): a command that takes one error class from core
    // loads nothing else of it.
    treeshake: {
      moduleSideEffects: [
        {
          test: /[\\/]packages[\\/](core|durable-write|openai-wire|tokenizer)[\\/]src[\\/]/,
          sideEffects: false,
        },
      ],
    },
    logLevel: "warn",
  });
  // Written beside dist/ and swapped in whole: a process starting meanwhile sees the old build or the new one,
  // never half of each (the staging folder is at dist/'s depth, so the rebased paths hold there too).
  const staging = `${outdir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  // Chunks sit beside main.js: the rebased `new URL(…, import.meta.url)` paths are relative to dist/.
  const { output } = await bundle.write({
    dir: staging,
    format: "esm",
    // The maps point at the TypeScript files in src/ (stack traces name them); the sources themselves are not
    // copied in, which keeps the maps Node parses at start-up small.
    sourcemap: true,
    sourcemapExcludeSources: true,
    entryFileNames: "[name].js",
    // A workspace package's chunk is named after the package, not after its src/ folder.
    chunkFileNames: (chunk) =>
      `${/packages[\\/]([^\\/]+)[\\/]src[\\/]index\.ts$/.exec(chunk.facadeModuleId ?? "")?.[1] ?? "[name]"}-[hash].js`,
  });
  await bundle.close();
  const chunks = output.filter((item) => item.type === "chunk");
  const declared = JSON.parse(readFileSync(resolve(serverDir, "package.json"), "utf8")).dependencies ?? {};
  const undeclared = new Set(
    chunks
      .flatMap((chunk) => [...chunk.imports, ...chunk.dynamicImports])
      .filter(
        (specifier) =>
          !specifier.startsWith("node:") && !chunks.some((chunk) => chunk.fileName === specifier),
      )
      .map(packageName)
      .filter((name) => !(name in declared)),
  );
  if (undeclared.size > 0) {
    rmSync(staging, { recursive: true, force: true });
    throw new Error(
      `the bundle imports ${[...undeclared].join(", ")} at run time: add them to apps/server/package.json dependencies`,
    );
  }
  const sources = [
    ...new Set(chunks.flatMap((chunk) => chunk.moduleIds).filter((id) => isAbsolute(id) && existsSync(id))),
  ].map((id) => relative(repoRoot, id));
  // A workspace package's package.json steers the bundle too ("exports").
  const manifests = new Set(sources.flatMap((source) => /^packages\/[^/]+\//.exec(source) ?? []));
  const inputs = [...sources, ...[...manifests].map((dir) => `${dir}package.json`)];
  // Which chunk loads what, for tests and for a person asking why a command loads a module.
  const graph = Object.fromEntries(
    chunks.map((chunk) => [
      chunk.fileName,
      {
        imports: chunk.imports,
        dynamicImports: chunk.dynamicImports,
        modules: chunk.moduleIds.map((id) => (isAbsolute(id) ? relative(repoRoot, id) : id)),
      },
    ]),
  );
  writeFileSync(resolve(staging, "chunks.json"), JSON.stringify(graph, null, 2));
  writeFileSync(resolve(staging, "build-info.json"), JSON.stringify({ startedAt, inputs }, null, 2));
  const retired = `${outdir}.old-${process.pid}`;
  if (existsSync(outdir)) renameSync(outdir, retired);
  renameSync(staging, outdir);
  rmSync(retired, { recursive: true, force: true });
  return { built: true, reason, ms: Date.now() - startedAt };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const outcome = await buildServer({ force: process.argv.includes("--force") });
  console.log(
    outcome.built
      ? `server built into apps/server/dist in ${outcome.ms} ms (${outcome.reason})`
      : "server build is current (apps/server/dist)",
  );
}
