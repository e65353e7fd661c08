import type { InboundMessage } from "@almanac/core";

/** Who may talk to the bot on one channel, and where. */
export interface AccessPolicy {
  readonly dmPolicy: "open" | "allowlist";
  readonly allowFrom: readonly string[];
  readonly groupPolicy: "open" | "allowlist" | "disabled";
  readonly groups: readonly string[];
  readonly requireMention: boolean;
  readonly noMentionGroups: readonly string[];
}

/** The gate's verdict; `reason` goes to the log, never to the user. */
export type AccessDecision =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string };

/**
 * Applies DM policy, group policy, sender allowlist and group mention gating.
 * In groups the sender allowlist applies too when it is non-empty.
 */
export function checkAccess(policy: AccessPolicy, message: InboundMessage): AccessDecision {
  const sender = message.sender.id;
  const senderAllowed = policy.allowFrom.includes(sender);
  const kind = message.conversation.kind;
  if (kind === "dm") {
    if (policy.dmPolicy === "allowlist" && !senderAllowed) {
      return { allowed: false, reason: `DM from ${sender}, who is not in the allowlist (ALLOW_FROM)` };
    }
    return { allowed: true };
  }
  if (kind === "group" || kind === "thread") {
    const group = message.conversation.parentId ?? message.conversation.id;
    if (policy.groupPolicy === "disabled")
      return { allowed: false, reason: "group messages are disabled (GROUP_POLICY)" };
    if (policy.groupPolicy === "allowlist" && !policy.groups.includes(group)) {
      return { allowed: false, reason: `group ${group} is not in the allowlist (GROUPS)` };
    }
    if (policy.allowFrom.length > 0 && !senderAllowed) {
      return { allowed: false, reason: `sender ${sender} is not in the allowlist (ALLOW_FROM)` };
    }
    const mentionNeeded = policy.requireMention && !policy.noMentionGroups.includes(group);
    if (mentionNeeded && !message.mentioned)
      return { allowed: false, reason: "group message without a mention" };
    return { allowed: true };
  }
  return { allowed: true };
}
