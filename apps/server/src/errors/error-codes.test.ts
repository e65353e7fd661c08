import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ERROR_CODES, httpStatusOf, renderErrorCodeList, textForPeople } from "./error-codes.js";

const root = fileURLToPath(new URL("../../../../", import.meta.url));

describe("the error code registry", () => {
  it("is what the console's code list holds (run `pnpm docs:config` after adding a code)", () => {
    expect(readFileSync(`${root}apps/server/src/errors/error-code-list.ts`, "utf8")).toBe(
      renderErrorCodeList(),
    );
  });

  it("declares every code docs/api.md documents, with the status the docs give", () => {
    const api = readFileSync(`${root}docs/api.md`, "utf8");
    const table = api.slice(api.indexOf("## Error codes"));
    const rows = [...table.matchAll(/^\| `([a-z_]+\.[a-z_]+)`(?: \/ `([a-z_]+\.[a-z_]+)`)? \| (\d{3})/gm)];
    expect(rows.length).toBeGreaterThan(15);
    for (const [, code, other, status] of rows) {
      for (const documented of [code, other].filter((value) => value !== undefined)) {
        const info = (
          ERROR_CODES as Record<string, { category: "user" | "provider" | "internal" } | undefined>
        )[documented as string];
        expect(info, documented).toBeDefined();
        if (other === undefined)
          expect(httpStatusOf(documented as string, info!.category), documented).toBe(Number(status));
      }
    }
  });

  it("derives statuses and chat texts from the registry, by category for the rest", () => {
    expect(httpStatusOf("session.busy", "user")).toBe(429);
    expect(httpStatusOf("storage.missing", "provider")).toBe(503);
    expect(httpStatusOf("llm.server", "provider")).toBe(502);
    expect(httpStatusOf("agent.hook_failed", "internal")).toBe(500);
    expect(textForPeople("model.not_configured", "user")).toContain("configure a model");
    expect(textForPeople("llm.network", "provider")).toContain("could not reach the language model");
    expect(textForPeople("agent.hook_failed", "internal")).toContain("The error has been logged");
  });
});
