import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  ApprovalCenter,
  type ApprovalRecord,
  approvalQuestion,
  parseApprovalAnswer,
} from "./approval-center.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "almanac-approvals-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const call = {
  sessionKey: "discord:default:dm:42",
  tool: "mcp__files__write_file",
  arguments: '{"path":"/tmp/notes.txt","content":"a very long text that must be shown whole"}',
  callId: "call_1",
};

function center(options: { timeoutMs?: number } = {}) {
  const changes: ApprovalRecord[] = [];
  const approvals = new ApprovalCenter({
    file: join(dir, "approvals.json"),
    timeoutMs: options.timeoutMs ?? 60_000,
    onChange: (record) => changes.push(record),
  });
  return { approvals, changes };
}

describe("the approval of a tool call", () => {
  it("waits for the owner, records the request durably before asking, and runs the call once approved", async () => {
    const { approvals, changes } = center();
    await approvals.open();
    const decision = approvals.request(call);
    await expect.poll(() => changes.length).toBe(1);
    const [asked] = changes;
    expect(asked).toMatchObject({ state: "pending", tool: call.tool, arguments: call.arguments });
    const journal = JSON.parse(await readFile(join(dir, "approvals.json"), "utf8"));
    expect(journal.approvals).toContainEqual(expect.objectContaining({ id: asked?.id, state: "pending" }));
    expect(approvals.decide(asked?.id ?? "", true, "console")).toMatchObject({
      state: "approved",
      decidedBy: "console",
    });
    expect(await decision).toMatchObject({ approved: true });
    // Answered once: a second answer changes nothing.
    expect(approvals.decide(asked?.id ?? "", false, "console")).toBeUndefined();
  });

  it("answers at once when the server stops while the request is being written, and after it stopped", async () => {
    const { approvals } = center();
    await approvals.open();
    const asked = approvals.request(call);
    await approvals.close();
    expect(await asked).toMatchObject({ approved: false, record: { state: "closed" } });
    expect((await approvals.request(call)).text).toContain("the server is stopping");
  });

  it("refuses on a denial, on the timeout and when the turn ends, with a result text that says which", async () => {
    const { approvals, changes } = center({ timeoutMs: 100 });
    await approvals.open();
    const denied = approvals.request(call);
    await expect.poll(() => changes.length).toBe(1);
    approvals.decide(changes[0]?.id ?? "", false, "discord:42");
    expect(await denied).toMatchObject({
      approved: false,
      text: expect.stringContaining("The owner denied"),
    });

    expect(await approvals.request(call)).toMatchObject({
      approved: false,
      record: { state: "expired" },
      text: expect.stringContaining("it was not run, as if denied"),
    });

    const turn = new AbortController();
    const cancelled = approvals.request(call, turn.signal);
    turn.abort();
    expect(await cancelled).toMatchObject({ approved: false, record: { state: "closed" } });
    expect(approvals.pending()).toEqual([]);
  });

  it("closes the approvals a previous run left pending, and keeps a damaged journal from stopping the start", async () => {
    const first = center();
    await first.approvals.open();
    void first.approvals.request(call);
    await expect.poll(() => first.changes.length).toBe(1);
    // The process dies here: a new one opens the same journal.
    const second = center();
    const closed = await second.approvals.open();
    expect(closed).toEqual([
      expect.objectContaining({ state: "closed", reason: "the server restarted before the owner answered" }),
    ]);
    expect(second.approvals.pending()).toEqual([]);

    await writeFile(join(dir, "approvals.json"), "{not json");
    expect(await center().approvals.open()).toEqual([]);
  });
});

describe("answers typed in a chat", () => {
  it("takes only the exact form with the id as consent", () => {
    expect(parseApprovalAnswer("approve k7qd")).toEqual({ id: "K7QD", approve: true });
    expect(parseApprovalAnswer("  DENY K7QD. ")).toEqual({ id: "K7QD", approve: false });
    expect(parseApprovalAnswer("批准 K7QD")).toEqual({ id: "K7QD", approve: true });
    for (const text of ["yes", "ok", "approve", "K7QD", "approve it", "approve K7QD please", ""])
      expect(parseApprovalAnswer(text), text).toBeUndefined();
  });

  it("asks with the tool and its whole arguments, pretty-printed", () => {
    const text = approvalQuestion(
      { ...call, id: "K7QD", requestedAt: 0, expiresAt: 600_000, state: "pending" },
      600_000,
    );
    expect(text).toContain("`mcp__files__write_file`");
    expect(text).toContain('"content": "a very long text that must be shown whole"');
    expect(text).toContain("approve K7QD");
    expect(text).toContain("10 minutes");
  });

  it("shows arguments that are not JSON as one quoted line, so they cannot close the fence and render", () => {
    const raw = "oops\n```\n<at id=all></at> [click](https://evil.example)";
    const text = approvalQuestion(
      { ...call, arguments: raw, id: "K7QD", requestedAt: 0, expiresAt: 600_000, state: "pending" },
      600_000,
    );
    const fenced = text.split("```json\n")[1]?.split("\n```")[0];
    expect(fenced).toBe(JSON.stringify(raw));
    expect(text.split("\n").filter((line) => line.startsWith("```"))).toEqual(["```json", "```"]);
  });
});
