#!/bin/sh
# The Dockerfile's build stage: builds Almanac from the build context in the current directory and assembles in
# <runtime-dir> exactly what the image runs. One script, so that apps/server/test/docker-build-context.test.ts
# runs these very steps on the very files the Dockerfile copies (a file the build needs but the Dockerfile does
# not copy fails that test, not a release).
#
# Usage: sh scripts/docker/build-app.sh <runtime-dir>
# Needs: pnpm on PATH, every package of pnpm-lock.yaml in pnpm's store (the Dockerfile runs `pnpm fetch` first;
# the test uses the machine's store): nothing here goes to the network.
#
# <runtime-dir> receives, laid out as in the repository (paths in the bundle are relative to apps/server/dist):
#   apps/server/dist            the server and CLI bundle (docs/build.md), its source maps, memory-index-worker.js
#   apps/server/package.json    read for the version; "type": "module" for bin/ and dist/
#   apps/server/bin/almanac.js  the `almanac` command (with scripts/build.mjs, which it asks whether dist is current)
#   apps/console/dist           the web console the server serves at /
#   packages/tokenizer/data     the BPE rank tables the token counter reads
#   node_modules, apps/server/node_modules   the server's production dependencies, nothing else
set -eu

runtime=${1:?usage: sh scripts/docker/build-app.sh <runtime-dir>}
source_dir=$(pwd)
mkdir -p "$runtime"
runtime=$(cd "$runtime" && pwd)
if [ -n "$(ls -A "$runtime")" ]; then
  echo "build-app: $runtime is not empty" >&2
  exit 1
fi

# 1. Build. Only the server, the console and the workspace packages they use are installed (not the root's
# tooling: Biome, Vitest, knip, TypeScript): Vite and Rolldown are all the builds run.
pnpm install --frozen-lockfile --offline --filter "@almanac/server..." --filter "@almanac/console"
pnpm run build

# 2. The server's production dependencies, from the store into the runtime tree. The workspace manifests are
# there only for pnpm to match the lockfile; the bundle has the workspace packages (@almanac/*) inlined.
cp package.json pnpm-lock.yaml pnpm-workspace.yaml "$runtime/"
for manifest in apps/*/package.json packages/*/package.json; do
  mkdir -p "$runtime/${manifest%/package.json}"
  cp "$manifest" "$runtime/$manifest"
done
(cd "$runtime" && pnpm install --prod --frozen-lockfile --offline --filter @almanac/server)

cd "$runtime"
# Type-only packages that production dependencies bring: TypeScript (23 MB; a peer of the Qdrant client, which
# pnpm installs with its peers) and @types/*. Nothing loads them at run time; removing them here rather than
# with auto-install-peers=false keeps the frozen lockfile valid (pnpm refuses a lockfile resolved with other
# peer settings). Links to what was removed, and to the workspace packages, go too.
rm -rf node_modules/.pnpm/typescript@* node_modules/.pnpm/@types+* apps/server/node_modules/@almanac
find . -type l ! -exec test -e {} \; -exec rm -f {} +
find node_modules -type d -name @types -empty -delete
# better-sqlite3 compiled here leaves its object files beside the addon (16 MB); a downloaded prebuilt binary is
# the addon alone, and that is all `bindings` loads.
for addon in node_modules/.pnpm/better-sqlite3@*/node_modules/better-sqlite3/build; do
  [ -f "$addon/Release/better_sqlite3.node" ] || continue
  find "$addon" -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
  find "$addon/Release" -mindepth 1 -maxdepth 1 ! -name better_sqlite3.node -exec rm -rf {} +
done
find . -mindepth 1 -maxdepth 1 -type f -exec rm -f {} +
rm -rf packages apps/console

# 3. The built files the server reads at run time.
mkdir -p apps/server/bin apps/server/scripts apps/console packages/tokenizer
cp -R "$source_dir/apps/server/dist" apps/server/dist
cp "$source_dir/apps/server/bin/almanac.js" apps/server/bin/
cp "$source_dir/apps/server/scripts/build.mjs" apps/server/scripts/
cp -R "$source_dir/apps/console/dist" apps/console/dist
cp -R "$source_dir/packages/tokenizer/data" packages/tokenizer/data

# 4. Checks: no TypeScript or type packages; every run-time dependency of the bundle loads from here, and the
# native ones (better-sqlite3, built for this Node; sqlite-vec) work.
leftovers=$(find node_modules \( -name 'typescript@*' -o -name '@types+*' -o -path '*/node_modules/typescript' \
  -o -path '*/node_modules/@types' \) -print | head -5)
if [ -n "$leftovers" ]; then
  echo "build-app: type-only packages left in the runtime tree: $leftovers" >&2
  exit 1
fi
cd apps/server
node --input-type=module -e '
import { readFileSync } from "node:fs";
const { dependencies } = JSON.parse(readFileSync("package.json", "utf8"));
for (const name of Object.keys(dependencies).filter((name) => !name.startsWith("@almanac/"))) {
  try {
    await import(name);
  } catch (error) {
    // The MCP SDK (1.x) declares a root entry it does not ship: such a package is loaded through a subpath.
    const { exports } = JSON.parse(readFileSync(`node_modules/${name}/package.json`, "utf8"));
    const subpath = Object.keys(exports ?? {}).find((key) => key.startsWith("./") && !key.includes("*"));
    if (error.code !== "ERR_MODULE_NOT_FOUND" || subpath === undefined) throw error;
    await import(`${name}/${subpath.slice(2)}`);
  }
}
const { default: Database } = await import("better-sqlite3");
const database = new Database(":memory:");
(await import("sqlite-vec")).load(database);
database.prepare("select vec_version()").get();
database.close();
'
echo "build-app: runtime tree in $runtime ($(du -sh "$runtime" | cut -f1))"
