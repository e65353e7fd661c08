import { defineTool, type Tool } from "@almanac/agent";
import { OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ToolCallRecord, ToolCatalog } from "./tool-catalog.js";

function tool(name: string, options: { approval?: boolean; fail?: boolean } = {}): Tool {
  return defineTool({
    name,
    description: `The ${name} tool.`,
    parameters: z.object({ text: z.string() }),
    ...(options.approval ? { requiresApproval: true } : {}),
    execute: async ({ text }) => (options.fail ? { content: `no: ${text}`, isError: true } : text),
  }) as unknown as Tool;
}

const SESSION = "api:default:api:me";
const group = sharedScope({ channel: "discord", account: "default", kind: "group", id: "g1" });

describe("the tool catalog", () => {
  it("gives each scope its sources' tools, with specs built once and rebuilt only when a source changed", () => {
    let revision = 0;
    let extra: Tool[] = [];
    const catalog = new ToolCatalog(
      [
        { name: "memory", tools: () => [tool("memory_search")] },
        { name: "workspace", tools: (scope) => (scope.kind === "owner" ? [tool("read_file")] : []) },
        { name: "mcp", tools: () => extra },
      ],
      { revision: () => revision },
    );
    const first = catalog.toolkit(OWNER_SCOPE, SESSION).specs();
    expect(first.map((spec) => spec.name)).toEqual(["memory_search", "read_file"]);
    expect(catalog.toolkit(OWNER_SCOPE, SESSION).specs()).toBe(first);
    expect(catalog.specs(OWNER_SCOPE)).toBe(first);
    expect(
      catalog
        .toolkit(group, SESSION)
        .specs()
        .map((spec) => spec.name),
    ).toEqual(["memory_search"]);
    expect(catalog.toolkit(group, SESSION).has("read_file")).toBe(false);

    extra = [tool("mcp__cal__add", { approval: true })];
    revision += 1;
    const changed = catalog.toolkit(OWNER_SCOPE, SESSION);
    expect(changed.specs().map((spec) => spec.name)).toContain("mcp__cal__add");
    expect(changed.requiresApproval("mcp__cal__add")).toBe(true);
    expect(changed.requiresApproval("read_file")).toBe(false);
  });

  it("lists every tool with its source and where it is offered", () => {
    const catalog = new ToolCatalog([
      { name: "memory", tools: () => [tool("memory_search")] },
      { name: "workspace", tools: (scope) => (scope.kind === "owner" ? [tool("read_file")] : []) },
    ]);
    expect(catalog.listing()).toEqual([
      expect.objectContaining({ name: "memory_search", source: "memory", scopes: ["owner", "shared"] }),
      expect.objectContaining({
        name: "read_file",
        source: "workspace",
        scopes: ["owner"],
        requiresApproval: false,
      }),
    ]);
  });

  it("reports every call with its source and outcome", async () => {
    const calls: ToolCallRecord[] = [];
    const catalog = new ToolCatalog(
      [{ name: "web", tools: () => [tool("web_fetch"), tool("broken", { fail: true })] }],
      { onCall: (call) => calls.push(call) },
    );
    const toolkit = catalog.toolkit(OWNER_SCOPE, SESSION);
    await toolkit.execute({ type: "tool_call", id: "1", name: "web_fetch", arguments: '{"text":"a"}' });
    await toolkit.execute({ type: "tool_call", id: "2", name: "broken", arguments: '{"text":"b"}' });
    await toolkit.execute({ type: "tool_call", id: "3", name: "unknown", arguments: "{}" });
    expect(calls.map(({ tool, source, outcome }) => ({ tool, source, outcome }))).toEqual([
      { tool: "web_fetch", source: "web", outcome: "ok" },
      { tool: "broken", source: "web", outcome: "error" },
    ]);
  });
});
