import type { InboundMessage } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { type AccessPolicy, checkAccess } from "./access-policy.js";

const base: AccessPolicy = {
  dmPolicy: "allowlist",
  allowFrom: ["alice"],
  groupPolicy: "allowlist",
  groups: ["g1"],
  requireMention: true,
  noMentionGroups: [],
};

function message(
  kind: "dm" | "group" | "thread",
  sender: string,
  mentioned: boolean,
  id = "g1",
  parentId?: string,
): InboundMessage {
  return {
    sessionKey: `x:default:${kind === "dm" ? "dm" : "group"}:${id}`,
    channel: "x",
    id: "m1",
    account: "default",
    conversation: { kind, id, ...(parentId ? { parentId } : {}) },
    sender: { id: sender },
    mentioned,
    text: "hi",
    receivedAt: 0,
  };
}

describe("checkAccess", () => {
  it("lets allowlisted senders DM and refuses everyone else by default", () => {
    expect(checkAccess(base, message("dm", "alice", true)).allowed).toBe(true);
    expect(checkAccess(base, message("dm", "mallory", true))).toMatchObject({
      allowed: false,
      reason: expect.stringContaining("mallory"),
    });
    expect(checkAccess({ ...base, dmPolicy: "open" }, message("dm", "mallory", true)).allowed).toBe(true);
  });

  it("answers in allowlisted groups only when mentioned", () => {
    expect(checkAccess(base, message("group", "alice", true)).allowed).toBe(true);
    expect(checkAccess(base, message("group", "alice", false))).toMatchObject({
      allowed: false,
      reason: "group message without a mention",
    });
    expect(checkAccess(base, message("group", "alice", true, "g2")).allowed).toBe(false);
    expect(checkAccess({ ...base, groupPolicy: "open" }, message("group", "alice", true, "g2")).allowed).toBe(
      true,
    );
    expect(checkAccess({ ...base, groupPolicy: "disabled" }, message("group", "alice", true)).allowed).toBe(
      false,
    );
  });

  it("checks a thread against its parent group and honours per-group mention overrides", () => {
    expect(checkAccess(base, message("thread", "alice", true, "t9", "g1")).allowed).toBe(true);
    expect(checkAccess({ ...base, noMentionGroups: ["g1"] }, message("group", "alice", false)).allowed).toBe(
      true,
    );
  });

  it("applies the sender allowlist in groups when it is set", () => {
    expect(checkAccess(base, message("group", "mallory", true)).allowed).toBe(false);
    expect(checkAccess({ ...base, allowFrom: [] }, message("group", "mallory", true)).allowed).toBe(true);
  });
});
