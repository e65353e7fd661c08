import type { Dirent } from "node:fs";
import { readdir } from "node:fs/promises";
import * as path from "node:path";
import { errnoCode } from "@almanac/core";
import { isMemoryFilePath, MEMORY_DIRECTORY, MEMORY_FILE, SHARED_DIRECTORY } from "./memory-paths.js";

async function entries(directory: string): Promise<Dirent[]> {
  try {
    return await readdir(directory, { withFileTypes: true });
  } catch (error) {
    const code = errnoCode(error);
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
}

/**
 * Every memory file in the workspace (private memory and shared chats' logs), relative and sorted, so
 * `MEMORY.md` comes first, then `memory/…`, then `shared/…`. The one walker: the store's listing and the
 * indexer's sync both use it. Symlinks are not followed (a link could lead out of the workspace), and
 * hidden files and directories are skipped.
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
    const relative = pending.pop() as string;
    for (const entry of await entries(path.join(workspace, relative))) {
      if (entry.name.startsWith(".")) continue;
      const child = `${relative}/${entry.name}`;
      if (entry.isDirectory()) pending.push(child);
      else if (entry.isFile() && isMemoryFilePath(child)) found.push(child);
    }
  }
  return found.sort();
}
