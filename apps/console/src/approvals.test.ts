import { describe, expect, it } from "vitest";
import { ApiError } from "./api.js";
import {
  type Approval,
  decidedOutcome,
  formatTimeLeft,
  prettyArguments,
  readApproval,
  readApprovals,
  refusedOutcome,
  timeLeftOf,
  whereOffered,
  withApproval,
} from "./approvals.js";

const pending: Approval = {
  id: "K7QD",
  sessionKey: "api:default:dm:mcp",
  tool: "mcp__everything__get-sum",
  arguments: '{"a":2,"b":3}',
  requestedAt: 1_000,
  expiresAt: 601_000,
  state: "pending",
};

describe("time left before an approval expires", () => {
  it("counts down in minutes and seconds, rounding up so the last second still shows", () => {
    expect(formatTimeLeft(601_000, 1_000)).toBe("10:00 left");
    expect(formatTimeLeft(601_000, 3_000)).toBe("9:58 left");
    expect(formatTimeLeft(601_000, 600_001)).toBe("0:01 left");
    expect(formatTimeLeft(10_000, 9_000)).toBe("0:01 left");
  });

  it("shows hours once there are any", () => {
    expect(formatTimeLeft(3_723_000, 0)).toBe("1:02:03 left");
    expect(formatTimeLeft(3_600_000, 0)).toBe("1:00:00 left");
  });

  it("never shows more than the whole wait, whatever the clock said before the approval arrived", () => {
    expect(timeLeftOf(pending, 0)).toBe("10:00 left");
    expect(timeLeftOf(pending, 31_000)).toBe("9:30 left");
    expect(timeLeftOf(pending, 601_000)).toBe("expired");
  });

  it("says expired at zero and after", () => {
    expect(formatTimeLeft(5_000, 5_000)).toBe("expired");
    expect(formatTimeLeft(5_000, 9_000)).toBe("expired");
  });
});

describe("tool-call arguments laid out for reading", () => {
  it("indents JSON as JSON.stringify does for ordinary arguments", () => {
    for (const value of [
      { a: 2, b: 3 },
      { path: "/tmp/x", options: { force: true, list: [1, 2, { deep: null }] }, empty: {}, none: [] },
      [],
      "just a string",
      42,
    ])
      expect(prettyArguments(JSON.stringify(value))).toBe(JSON.stringify(value, null, 2));
  });

  it("keeps every character of the values as the model sent them", () => {
    expect(prettyArguments('{"id": 12345678901234567890123}')).toBe('{\n  "id": 12345678901234567890123\n}');
    expect(prettyArguments('{"t":"a, b: {c} [d] \\"e\\" \\u003cx\\u003e"}')).toBe(
      '{\n  "t": "a, b: {c} [d] \\"e\\" \\u003cx\\u003e"\n}',
    );
    // A repeated key is shown twice: the tool may read either.
    expect(prettyArguments('{"path":"a","path":"b"}')).toBe('{\n  "path": "a",\n  "path": "b"\n}');
    expect(prettyArguments('{ "a" :\n [ ] }')).toBe('{\n  "a": []\n}');
  });

  it("shows text that is not JSON exactly as it came, however long", () => {
    const long = `{"content": "${"x".repeat(20_000)}"`;
    expect(prettyArguments(long)).toBe(long);
    expect(prettyArguments("not json")).toBe("not json");
    expect(prettyArguments("")).toBe("");
  });

  it("never shortens long arguments", () => {
    const content = "y".repeat(50_000);
    expect(prettyArguments(JSON.stringify({ content }))).toContain(content);
  });
});

describe("approvals read from the server", () => {
  it("reads a record and leaves out ones the console cannot show or answer", () => {
    expect(readApproval({ ...pending, callId: "call_1" })).toEqual(pending);
    expect(
      readApproval({ ...pending, state: "closed", decidedAt: 5, decidedBy: "api", reason: "restarted" }),
    ).toEqual({ ...pending, state: "closed", decidedAt: 5, decidedBy: "api", reason: "restarted" });
    expect(readApproval({ ...pending, id: "" })).toBeUndefined();
    expect(readApproval({ ...pending, state: "maybe" })).toBeUndefined();
    expect(readApproval({ ...pending, expiresAt: "soon" })).toBeUndefined();
    expect(readApproval("K7QD")).toBeUndefined();
    expect(readApprovals([pending, null, { id: "X" }])).toEqual([pending]);
    expect(readApprovals({ pending })).toEqual([]);
  });

  it("keeps the pending list oldest first, replacing a changed one and dropping a settled one", () => {
    const later: Approval = { ...pending, id: "M2PX", requestedAt: 2_000, expiresAt: 602_000 };
    const list = withApproval(withApproval([], later), pending);
    expect(list.map((approval) => approval.id)).toEqual(["K7QD", "M2PX"]);
    expect(withApproval(list, { ...later }).map((approval) => approval.id)).toEqual(["K7QD", "M2PX"]);
    expect(withApproval(list, { ...pending, state: "approved" })).toEqual([later]);
    expect(withApproval(list, { ...pending, id: "ZZZZ", state: "expired" })).toEqual(list);
  });
});

describe("the outcome of an answer", () => {
  it("says what the settled record says", () => {
    expect(decidedOutcome({ ...pending, state: "approved" }, pending)).toEqual({
      kind: "decided",
      message: "Approved K7QD: mcp__everything__get-sum runs now.",
    });
    expect(decidedOutcome({ ...pending, state: "denied" }, pending).message).toBe(
      "Denied K7QD: mcp__everything__get-sum will not run.",
    );
  });

  it("says plainly that an approval was already answered or expired", () => {
    const conflict = new ApiError(409, "approval.not_pending", "Approval K7QD is already expired.");
    expect(refusedOutcome(conflict)).toEqual({
      kind: "settled",
      message: "Already answered or expired: Approval K7QD is already expired.",
    });
    expect(refusedOutcome(new ApiError(404, "approval.not_found", "No approval K7QD.")).kind).toBe("settled");
    expect(refusedOutcome(new ApiError(500, "http.500", "Bad gateway"))).toEqual({
      kind: "failed",
      message: "Bad gateway (http.500)",
    });
  });
});

describe("where a tool is offered", () => {
  it("names the owner's conversations, shared chats, or both", () => {
    expect(whereOffered(["owner"])).toBe("owner only");
    expect(whereOffered(["owner", "shared"])).toBe("owner and shared chats");
    expect(whereOffered(["shared"])).toBe("shared chats only");
    expect(whereOffered([])).toBe("not offered");
  });
});
