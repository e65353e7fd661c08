import { createHash } from "node:crypto";

/** Longest function name providers accept. */
const MAX_NAME = 64;

function safe(part: string): string {
  return part.replace(/[^a-zA-Z0-9_-]/g, "_");
}

/**
 * The name a server's tool has for the model: `mcp__<server>__<tool>`, stable across restarts and list changes,
 * made of the characters providers accept; a name over 64 characters keeps its start and gets a short hash of the
 * whole, so two long names never collide.
 */
export function namespacedToolName(server: string, tool: string): string {
  const name = `mcp__${safe(server)}__${safe(tool)}`;
  if (name.length <= MAX_NAME) return name;
  const hash = createHash("sha256").update(`${server}\u0000${tool}`).digest("hex").slice(0, 8);
  return `${name.slice(0, MAX_NAME - hash.length - 1)}_${hash}`;
}
