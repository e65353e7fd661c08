import type { AnyTool } from "./toolkit.js";

/** Whose conversation a turn belongs to, as far as tools care: the owner's, or a shared chat's. */
export interface ToolScope {
  readonly kind: "owner" | "shared";
}

/**
 * Where tools come from (memory, workspace files, a built-in like web_fetch, an MCP server): each source says
 * which tools a scope may use. The turn asks every source for "tools for this scope" and never knows where a
 * tool came from. Called per turn: a source answers from what it holds (never a network round trip).
 */
export interface ToolSource {
  /** Shown in `GET /api/tools` (e.g. `memory`, `workspace`, `web`, `mcp:calendar`). */
  readonly name: string;
  tools(scope: ToolScope): readonly AnyTool[];
}
