import { createWorkspaceFileTools, defineTool, type Tool } from "@almanac/agent";
import type { Memory } from "@almanac/memory";
import { createWebFetchTool, type WebFetchOptions } from "@almanac/web-fetch";
import { z } from "zod";
import type { ServerToolSource } from "./tool-catalog.js";

/**
 * The memory tools over the scope's own memory (a shared chat reaches only its own log), and for the owner
 * `memory_forget`: a shared chat can never make the owner's memory forget anything.
 */
export function memoryToolSource(memory: Memory): ServerToolSource {
  return {
    name: "memory",
    tools: (scope, sessionKey) =>
      scope.kind === "owner"
        ? [...memory.toolsFor(scope), forgetTool(memory, sessionKey)]
        : memory.toolsFor(scope),
  };
}

const forgetParameters = z.object({ phrase: z.string().min(3).max(200) });

/** `memory_forget`: removes a fact from MEMORY.md and every daily log, and keeps it from coming back. */
function forgetTool(memory: Memory, sessionKey: string): Tool {
  return defineTool({
    name: "memory_forget",
    description:
      "Forget a fact when asked: removes every line of MEMORY.md and the daily logs that mentions the phrase, and keeps it from coming back. Use a short distinctive phrase; say what was removed.",
    parameters: forgetParameters,
    async execute({ phrase }) {
      const report = await memory.forget(phrase, sessionKey);
      if (report.files.length === 0)
        return `Nothing in memory mentions "${phrase}". It is recorded as forgotten, so it will not be written to memory later.`;
      const lines = report.files.flatMap((file) =>
        file.removed.map((line) => `- ${file.path}: ${line.trim()}`),
      );
      return `Forgot "${phrase}": removed ${lines.length} line${lines.length === 1 ? "" : "s"}:\n${lines.join("\n")}\nBackups of the previous versions are deleted after ${new Date(report.backupsKeptUntil).toISOString().slice(0, 10)}.`;
    },
  }) as unknown as Tool;
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
