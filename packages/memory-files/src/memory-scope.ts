import { createHash } from "node:crypto";
import {
  isPrivateMemoryPath,
  isSharedMemoryPath,
  MEMORY_DIRECTORY,
  SHARED_DIRECTORY,
} from "./memory-paths.js";

/**
 * Whose memory a session may reach. `owner`: the private memory (MEMORY.md, `memory/**`). `shared`: a
 * group or other shared chat, which reaches only its own log folder `shared/<folder>/`.
 */
export type MemoryScope =
  | { readonly kind: "owner" }
  | {
      readonly kind: "shared";
      /** The conversation the scope belongs to, as `{channel}:{account}:{kind}:{id}` (for logs and prompts). */
      readonly id: string;
      /** One path segment under `shared/`, safe on every file system (see {@link sharedScopeFolder}). */
      readonly folder: string;
    };

/** The owner's scope. */
export const OWNER_SCOPE: MemoryScope = Object.freeze({ kind: "owner" });

/** Longest folder name kept readable; longer ones end in a hash of the whole name. */
const MAX_FOLDER_LENGTH = 120;

function encodeFolderPart(value: string): string {
  let encoded = "";
  for (const byte of new TextEncoder().encode(value)) {
    const isLower = byte >= 0x61 && byte <= 0x7a;
    const isDigit = byte >= 0x30 && byte <= 0x39;
    // `-` separates the parts, so it is escaped inside one; upper case is escaped so that folders of
    // ids differing only in case stay apart on case-insensitive file systems.
    encoded +=
      isLower || isDigit || byte === 0x5f || byte === 0x2e
        ? String.fromCharCode(byte)
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return encoded;
}

/**
 * The folder of a shared conversation: `<channel>-<account>-<kind>-<id>`, each part escaped so the name
 * is injective, never hidden (it starts with the channel name) and one path segment; long ones are hashed.
 */
export function sharedScopeFolder(parts: {
  readonly channel: string;
  readonly account: string;
  readonly kind: string;
  readonly id: string;
}): string {
  const folder = [parts.channel, parts.account, parts.kind, parts.id].map(encodeFolderPart).join("-");
  if (folder.length <= MAX_FOLDER_LENGTH) return folder;
  const digest = createHash("sha256").update(folder, "utf8").digest("hex").slice(0, 32);
  return `${folder.slice(0, MAX_FOLDER_LENGTH - 33)}~${digest}`;
}

/** The scope of one shared conversation. */
export function sharedScope(parts: {
  readonly channel: string;
  readonly account: string;
  readonly kind: string;
  readonly id: string;
}): MemoryScope {
  return Object.freeze({
    kind: "shared",
    id: [parts.channel, parts.account, parts.kind, parts.id].join(":"),
    folder: sharedScopeFolder(parts),
  });
}

/** Where a scope's conversations of one local day are summarized: `memory/<date>.md` or `shared/<folder>/<date>.md`. */
export function dailyLogPath(scope: MemoryScope, date: string): string {
  return scope.kind === "owner"
    ? `${MEMORY_DIRECTORY}/${date}.md`
    : `${SHARED_DIRECTORY}/${scope.folder}/${date}.md`;
}

/** The workspace-relative folder a shared scope's files live in, with a trailing `/`. */
export function sharedScopePrefix(scope: Extract<MemoryScope, { kind: "shared" }>): string {
  return `${SHARED_DIRECTORY}/${scope.folder}/`;
}

/** Whether a memory file (workspace-relative, `/`-separated) belongs to a scope: the owner's private files, or the shared scope's own folder. */
export function isPathInScope(scope: MemoryScope, relativePath: string): boolean {
  if (scope.kind === "owner") return isPrivateMemoryPath(relativePath);
  return relativePath.startsWith(sharedScopePrefix(scope)) && isSharedMemoryPath(relativePath);
}

/** Which indexed paths a search in this scope may return (backends filter with it before ranking). */
export type ScopePathFilter =
  | { readonly excludePrefix: string; readonly prefix?: undefined }
  | { readonly prefix: string; readonly excludePrefix?: undefined };

/** The path filter of a scope: the owner sees everything but `shared/`, a shared chat only its own folder. */
export function scopePathFilter(scope: MemoryScope): ScopePathFilter {
  return scope.kind === "owner"
    ? { excludePrefix: `${SHARED_DIRECTORY}/` }
    : { prefix: sharedScopePrefix(scope) };
}

/** Whether a path passes a filter (for backends that filter in code, and as the reference for tests). */
export function matchesPathFilter(filter: ScopePathFilter, relativePath: string): boolean {
  return filter.prefix !== undefined
    ? relativePath.startsWith(filter.prefix)
    : !relativePath.startsWith(filter.excludePrefix);
}
