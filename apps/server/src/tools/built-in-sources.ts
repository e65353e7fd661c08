import { createWorkspaceFileTools, type Tool } from "@almanac/agent";
import type { Memory } from "@almanac/memory";
import { createWebFetchTool, type WebFetchOptions } from "@almanac/web-fetch";
import type { ServerToolSource } from "./tool-catalog.js";

/** The memory tools (search, get, write) over the scope's own memory: a shared chat reaches only its own log. */
export function memoryToolSource(memory: Memory): ServerToolSource {
  return { name: "memory", tools: (scope) => memory.toolsFor(scope) };
}

/**
 * The workspace file tools, for the owner only: no file tool reaches the workspace from a shared chat. Made per
 * turn: the versions of the files read, so a write can tell whether a person changed one meanwhile.
 */
export function workspaceToolSource(memory: Memory, root: string): ServerToolSource {
  return {
    name: "workspace",
    tools: (scope) => {
      if (scope.kind === "shared") return [];
      const seen = new Map<string, string>();
      return createWorkspaceFileTools({
        root,
        readText: (target) => memory.readWorkspaceText(target, seen),
        writeText: (target, content) => memory.writeWorkspaceText(target, content, seen),
      });
    },
  };
}

/** Options of {@link webToolSource}. */
export interface WebToolOptions extends WebFetchOptions {
  /** Offer web_fetch in shared chats too. */
  readonly sharedChats: boolean;
}

/** `web_fetch`: public pages as Markdown, for the owner (and shared chats when the operator says so). */
export function webToolSource(options: WebToolOptions): ServerToolSource {
  const tool: Tool = createWebFetchTool(options) as unknown as Tool;
  return {
    name: "web",
    tools: (scope) => (scope.kind === "shared" && !options.sharedChats ? [] : [tool]),
  };
}
