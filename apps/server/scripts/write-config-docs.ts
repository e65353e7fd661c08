/** Regenerates README.md's configuration table and .env.example from the config schema, and the error code list. */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CONFIG_TABLE_MARKERS, renderConfigTable, renderEnvExample } from "../src/config/config-docs.js";
import { renderErrorCodeList } from "../src/errors/error-codes.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const readmePath = `${root}README.md`;
const readme = readFileSync(readmePath, "utf8");
const start = readme.indexOf(CONFIG_TABLE_MARKERS.start);
const end = readme.indexOf(CONFIG_TABLE_MARKERS.end);
if (start === -1 || end === -1) throw new Error("README.md lacks the config-table markers");
writeFileSync(
  readmePath,
  `${readme.slice(0, start + CONFIG_TABLE_MARKERS.start.length)}\n${renderConfigTable()}\n${readme.slice(end)}`,
);
writeFileSync(`${root}.env.example`, renderEnvExample());
writeFileSync(`${root}apps/server/src/errors/error-code-list.ts`, renderErrorCodeList());
console.log("README.md configuration table, .env.example and the error code list regenerated");
