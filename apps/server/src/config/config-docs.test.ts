import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CONFIG_TABLE_MARKERS, renderConfigTable, renderEnvExample } from "./config-docs.js";

const root = fileURLToPath(new URL("../../../../", import.meta.url));

describe("configuration docs", () => {
  it("README's configuration table matches the schema (run `pnpm docs:config` after changing it)", () => {
    const readme = readFileSync(`${root}README.md`, "utf8");
    const start = readme.indexOf(CONFIG_TABLE_MARKERS.start);
    const end = readme.indexOf(CONFIG_TABLE_MARKERS.end);
    expect(start).toBeGreaterThan(-1);
    expect(readme.slice(start + CONFIG_TABLE_MARKERS.start.length, end).trim()).toBe(renderConfigTable());
  });

  it(".env.example lists every key (run `pnpm docs:config` after changing the schema)", () => {
    expect(readFileSync(`${root}.env.example`, "utf8")).toBe(renderEnvExample());
  });
});
