import * as path from "node:path";

// The one rule for "is this a memory file", used by the memory file store (admin API, summarizer, the chat
// agent's file tools through the server) and by the index (walker, watcher, scope filter).

/** The long-term memory file at the workspace root. */
export const MEMORY_FILE = "MEMORY.md";
/** The directory of daily logs (`memory/YYYY-MM-DD.md`) and notes. */
export const MEMORY_DIRECTORY = "memory";
/**
 * The directory of shared chats' own logs: `shared/<folder>/YYYY-MM-DD.md`, one folder per group
 * (see `memory-scope.ts`). Deliberately outside `memory/`, so no private-memory rule ever matches it.
 */
export const SHARED_DIRECTORY = "shared";

/**
 * No empty, hidden (`.`-prefixed: editor swap, lock and backup files, our temp files) or `..` segment, and no
 * backslash or NUL anywhere: a `\` is a separator on Windows, so `memory/a\..\..\x.md` must not pass as one name.
 */
function hasSafeSegments(relativePath: string, segments: readonly string[]): boolean {
  if (relativePath.includes("\\") || relativePath.includes("\0")) return false;
  return !segments.some((segment) => segment === "" || segment.startsWith("."));
}

/**
 * Whether a workspace-relative path (`/` separators) is private memory, the owner's alone: `MEMORY.md`,
 * or a `.md` file under `memory/` (any depth) with no hidden segment. Case-sensitive: `memory.md` is not memory.
 */
export function isPrivateMemoryPath(relativePath: string): boolean {
  if (relativePath === MEMORY_FILE) return true;
  const segments = relativePath.split("/");
  if (segments[0] !== MEMORY_DIRECTORY || segments.length < 2) return false;
  return hasSafeSegments(relativePath, segments) && relativePath.endsWith(".md");
}

/** Whether a relative path is a shared chat's log: `shared/<folder>/<name>.md` (exactly one folder level, no hidden segment). */
export function isSharedMemoryPath(relativePath: string): boolean {
  const segments = relativePath.split("/");
  return (
    segments.length === 3 &&
    segments[0] === SHARED_DIRECTORY &&
    hasSafeSegments(relativePath, segments) &&
    relativePath.endsWith(".md")
  );
}

/**
 * Whether a workspace-relative path (already normalized, `/`-separated) is a memory file: private memory or a
 * shared chat's log. What the store guards, the walker lists and the index holds (search filters by scope).
 */
export function isMemoryFilePath(relativePath: string): boolean {
  return isPrivateMemoryPath(relativePath) || isSharedMemoryPath(relativePath);
}

/** Whether a relative path is `memory/` itself or inside it (directories to descend into). */
export function isInMemoryDirectory(relativePath: string): boolean {
  return relativePath === MEMORY_DIRECTORY || relativePath.startsWith(`${MEMORY_DIRECTORY}/`);
}

/** Whether a relative path is `shared/` itself or inside it. */
export function isInSharedDirectory(relativePath: string): boolean {
  return relativePath === SHARED_DIRECTORY || relativePath.startsWith(`${SHARED_DIRECTORY}/`);
}

/** A path relative to the workspace with `/` separators. */
export function toRelativePath(workspace: string, absolute: string): string {
  return path.relative(workspace, absolute).split(path.sep).join("/");
}
