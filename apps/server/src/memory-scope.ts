import { parseSessionKey, type SessionKeyParts } from "@almanac/core";
import { type MemoryScope, OWNER_SCOPE, sharedScope } from "@almanac/memory-files";
import { accessSettingsOf } from "./channels/channel-list.js";
import type { AlmanacConfig } from "./config/config-schema.js";

/** The surfaces only the owner reaches: the web console and the admin-token OpenAI endpoint. */
const OWNER_SURFACES: ReadonlySet<string> = new Set(["web:web", "api:api"]);

function isOwner(parts: SessionKeyParts, config: AlmanacConfig): boolean {
  if (OWNER_SURFACES.has(`${parts.channel}:${parts.kind}`)) return true;
  // Every channel in the list has access settings (its descriptor's schema cannot compile without them).
  const settings = accessSettingsOf(config, parts.channel);
  if (settings === undefined) return false;
  // Chat channels key a DM by the sender and a group by the group (threads carry the group as id), so the
  // key alone says who is talking. With DM_POLICY=open a stranger's DM is allowed but is not the owner.
  if (parts.kind === "dm") return settings.allowFrom.includes(parts.id);
  if (parts.kind === "group") return settings.trustedGroups.includes(parts.id);
  return false;
}

/**
 * Whose memory a session reaches, decided from its key and the configuration. The one place this is
 * decided: the system prompt's excerpt, the agent's tools, the summarizer's target log and the search
 * filter all follow it. The owner's sessions (console, `/v1/chat/completions`, DMs from a channel's
 * `ALLOW_FROM`, groups in its `TRUSTED_GROUPS`) get the private memory; every other session (groups, DMs
 * from strangers, anything unknown) gets a shared scope of its own conversation, never the private files.
 */
export function resolveMemoryScope(sessionKey: string, config: AlmanacConfig): MemoryScope {
  let parts: SessionKeyParts;
  try {
    parts = parseSessionKey(sessionKey);
  } catch {
    // Not a canonical key (no session has one): deny by default, in a folder of its own.
    return sharedScope({ channel: "unknown", account: "unknown", kind: "unknown", id: sessionKey });
  }
  if (isOwner(parts, config)) return OWNER_SCOPE;
  return sharedScope({ channel: parts.channel, account: parts.account, kind: parts.kind, id: parts.id });
}
