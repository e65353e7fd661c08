import type { Tool } from "@almanac/agent";
import type { Memory } from "@almanac/memory";
import { OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import { describe, expect, it } from "vitest";
import { memoryToolSource, workspaceToolSource } from "./built-in-sources.js";

const search = { name: "memory_search" } as Tool;
const memory = { toolsFor: () => [search] } as unknown as Memory;
const group = sharedScope({ channel: "discord", account: "default", kind: "group", id: "g1" });

describe("the built-in tool sources", () => {
  it("offer memory_forget and the workspace tools to the owner only", () => {
    const names = (tools: readonly { name: string }[]) => tools.map((tool) => tool.name);
    expect(names(memoryToolSource(memory).tools(OWNER_SCOPE, "web:default:web:main"))).toEqual([
      "memory_search",
      "memory_forget",
    ]);
    expect(names(memoryToolSource(memory).tools(group, "discord:default:group:g1"))).toEqual([
      "memory_search",
    ]);
    expect(workspaceToolSource(memory, "/tmp/workspace").tools(group, "discord:default:group:g1")).toEqual(
      [],
    );
    expect(
      names(workspaceToolSource(memory, "/tmp/workspace").tools(OWNER_SCOPE, "web:default:web:main")),
    ).toContain("read_file");
  });
});
