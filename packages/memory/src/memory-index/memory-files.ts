import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import * as path from "node:path";
import { dailyLogDate } from "./hybrid-score.js";
import type { MemorySource } from "./types.js";

/** The long-term memory file at the workspace root. */
export const MEMORY_FILE = "MEMORY.md";
/** The directory of daily logs and notes. */
export const MEMORY_DIRECTORY = "memory";
/**
 * The directory of shared chats' own logs: `shared/<folder>/YYYY-MM-DD.md`, one folder per group
 * (see `memory-scope.ts`). Deliberately outside `memory/`, so no private-memory rule ever matches it.
 */
export const SHARED_DIRECTORY = "shared";

function hasSafeSegments(segments: readonly string[]): boolean {
  return !segments.some((segment) => segment === "" || segment.startsWith(".") || segment === "..");
}

/**
 * Whether a workspace-relative path (`/` separators) is private memory, the owner's alone: `MEMORY.md`,
 * or a `.md` file under `memory/` with no hidden segment (editor swap, lock and backup files start with a dot).
 */
export function isPrivateMemoryPath(relativePath: string): boolean {
  if (relativePath === MEMORY_FILE) return true;
  const segments = relativePath.split("/");
  if (segments[0] !== MEMORY_DIRECTORY || segments.length < 2) return false;
  if (!hasSafeSegments(segments)) return false;
  return relativePath.endsWith(".md");
}

/** Whether a relative path is a shared chat's log: `shared/<folder>/<name>.md` (exactly one folder level, no hidden segment). */
export function isSharedMemoryPath(relativePath: string): boolean {
  const segments = relativePath.split("/");
  return (
    segments.length === 3 &&
    segments[0] === SHARED_DIRECTORY &&
    hasSafeSegments(segments) &&
    relativePath.endsWith(".md")
  );
}

/** Whether a workspace-relative path is indexed: private memory or a shared chat's log (search filters by scope). */
export function isMemoryPath(relativePath: string): boolean {
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

/** `memory` for MEMORY.md, `daily` for `memory/YYYY-MM-DD.md` logs, `notes` for the rest. */
export function memorySource(relativePath: string): MemorySource {
  if (relativePath === MEMORY_FILE) return "memory";
  return dailyLogDate(relativePath) === undefined ? "notes" : "daily";
}

/** A path relative to the workspace with `/` separators. */
export function toRelativePath(workspace: string, absolute: string): string {
  return path.relative(workspace, absolute).split(path.sep).join("/");
}

async function entries(directory: string): Promise<Dirent[]> {
  try {
    return await readdir(directory, { withFileTypes: true });
  } catch (error) {
    if (
      typeof error === "object" &&
      error !== null &&
      "code" in error &&
      (error.code === "ENOENT" || error.code === "ENOTDIR")
    ) {
      return [];
    }
    throw error;
  }
}

/**
 * Every indexed file in the workspace (private memory and shared chats' logs), relative and sorted. Symlinks are not followed (a link could
 * lead out of the workspace), and hidden files and directories are skipped.
 */
export async function listMemoryFiles(workspace: string): Promise<string[]> {
  const found: string[] = [];
  const pending: string[] = [];
  for (const entry of await entries(workspace)) {
    if (entry.name === MEMORY_FILE && entry.isFile()) found.push(MEMORY_FILE);
    if (entry.name === MEMORY_DIRECTORY && entry.isDirectory()) pending.push(MEMORY_DIRECTORY);
    if (entry.name === SHARED_DIRECTORY && entry.isDirectory()) pending.push(SHARED_DIRECTORY);
  }
  while (pending.length > 0) {
    const relative = pending.pop()!;
    for (const entry of await entries(path.join(workspace, relative))) {
      if (entry.name.startsWith(".")) continue;
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) pending.push(child);
      else if (entry.isFile() && isMemoryPath(child)) found.push(child);
    }
  }
  return found.sort();
}
