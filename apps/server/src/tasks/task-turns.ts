import type { Conversation, InboundMessage } from "@almanac/core";
import { parseSessionKey } from "@almanac/core";
import { type FiringRecord, formatLocal, type TaskRecord } from "@almanac/tasks";

/** Who a scheduled turn's message is from: the schedule, not a person (never an owner who could approve). */
export const TASK_SENDER = { id: "almanac:scheduled-task", name: "Scheduled task" } as const;

/** The answer of a heartbeat with nothing to say; never delivered. */
export const SILENT_ANSWER = "[silent]";

/** The conversation of a session key, as a message in it would carry. */
function conversationOf(sessionKey: string): {
  readonly channel: string;
  readonly account: string;
  readonly conversation: Conversation;
} {
  const parts = parseSessionKey(sessionKey);
  const kind = parts.kind as Conversation["kind"];
  const conversation: Conversation =
    parts.thread === undefined
      ? { kind, id: parts.id }
      : { kind: "thread", id: parts.thread, parentId: parts.id };
  return { channel: parts.channel, account: parts.account, conversation };
}

/**
 * The message a firing puts into its conversation: the task's instruction, marked as a scheduled task with its
 * time (and whether it is late), so the model knows it speaks first and the transcript says why it did.
 */
export function taskInbound(firing: FiringRecord, text: string, now: number): InboundMessage {
  const { channel, account, conversation } = conversationOf(firing.sessionKey);
  return {
    sessionKey: firing.sessionKey,
    channel,
    id: firing.id,
    account,
    conversation,
    sender: TASK_SENDER,
    mentioned: true,
    text,
    receivedAt: now,
  };
}

/** The text of a task's turn. */
export function taskPrompt(task: TaskRecord, firing: FiringRecord, now: number): string {
  const due = formatLocal(firing.dueAt, task.timeZone);
  const late = firing.late ? `; it is late: now is ${formatLocal(now, task.timeZone)}, say so` : "";
  return [
    `[Scheduled task ${task.id} "${task.title}", due ${due}${late}]`,
    task.instruction,
    "",
    "(This message is from the schedule, not from the person. Your answer is sent to this conversation as your message; write it to them.)",
  ].join("\n");
}

/** The text of a heartbeat's turn: the owner's checklist, and how to stay silent. */
export function heartbeatPrompt(checklist: string, now: number, timeZone: string): string {
  return [
    `[Heartbeat, ${formatLocal(now, timeZone)}]`,
    "Your periodic check. The owner's checklist (HEARTBEAT.md in the workspace):",
    "",
    checklist.trim(),
    "",
    `If something on it needs the owner's attention now, write them a short message about it. Otherwise answer with exactly ${SILENT_ANSWER} and nothing else: that answer is not sent.`,
  ].join("\n");
}
