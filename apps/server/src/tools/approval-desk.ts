import {
  type ApprovalCenter,
  type ApprovalRecord,
  approvalQuestion,
  parseApprovalAnswer,
} from "@almanac/approvals";
import { type InboundMessage, parseSessionKey } from "@almanac/core";
import { accessSettingsOf } from "../channels/channel-list.js";
import type { AlmanacConfig } from "../config/config-schema.js";
import type { ApprovalGate } from "../runtime/turn-runner.js";

/** The surfaces only the owner reaches (the admin token guards them): the web console and the OpenAI endpoint. */
const OWNER_CHANNELS: ReadonlySet<string> = new Set(["web", "api"]);

/**
 * True when the sender of `inbound` is the owner: anyone on the console or the API (they hold the admin token),
 * and on a chat app the people in that channel's `ALLOW_FROM`. Not the memory scope: a member of a trusted group
 * shares the owner's memory, not the right to approve the owner's tools.
 */
export function isOwnerSender(inbound: InboundMessage, config: AlmanacConfig): boolean {
  if (OWNER_CHANNELS.has(inbound.channel)) return true;
  const settings = accessSettingsOf(config, inbound.channel);
  return settings?.allowFrom.includes(inbound.sender.id) === true;
}

/** Words that look like an answer to a question but name no approval. */
const BARE_ANSWER =
  /^\s*(y|yes|ok|okay|sure|go|go ahead|do it|n|no|nope|approve|approved|deny|denied|好|好的|是|可以|行|批准|不|不行|拒绝)\s*[.!。！]?\s*$/iu;

/**
 * The approvals as people meet them in a conversation: the gate a turn waits at (the question is asked in the
 * conversation where its channel can), and the answers typed in a chat (`approve K7QD`), which are taken before the
 * session's lane (the lane is busy with the turn that waits).
 */
export class ApprovalDesk {
  readonly #center: ApprovalCenter;
  readonly #config: AlmanacConfig;

  constructor(center: ApprovalCenter, config: AlmanacConfig) {
    this.#center = center;
    this.#config = config;
  }

  /** Where turns wait for the owner. */
  readonly gate: ApprovalGate = async (request, { signal, notify }) => {
    const decision = await this.#center.request(request, signal, (record) => {
      const buttons = [
        { label: "Approve", reply: `approve ${record.id}`, style: "primary" },
        { label: "Deny", reply: `deny ${record.id}`, style: "danger" },
      ] as const;
      notify?.(approvalQuestion(record, this.#center.timeoutMs), buttons).catch(() => {
        // The question could not be sent: the console and the API still show it.
      });
    });
    const { record } = decision;
    const by = record.decidedBy === undefined ? "" : `:by:${record.decidedBy}`;
    return {
      approved: decision.approved,
      text: decision.text,
      mark: `approval:${record.id}:${record.state}${by}`,
    };
  };

  /**
   * The reply to a chat message that answers an approval, or undefined when the message is not one (it then
   * goes to its session as usual). Only the owner may answer; a bare "yes" while an approval of the same
   * session waits gets the exact words to type.
   */
  answer(inbound: InboundMessage): string | undefined {
    const answer = parseApprovalAnswer(inbound.text);
    if (answer === undefined) {
      if (!BARE_ANSWER.test(inbound.text)) return undefined;
      const waiting = this.#center.pending().filter((record) => record.sessionKey === inbound.sessionKey);
      const first = waiting[0];
      if (first === undefined) return undefined;
      return `An approval is waiting: reply \`approve ${first.id}\` to run \`${first.tool}\` or \`deny ${first.id}\` to refuse.`;
    }
    if (!isOwnerSender(inbound, this.#config)) return "Only the owner can answer approvals. Nothing was run.";
    const by = OWNER_CHANNELS.has(inbound.channel)
      ? inbound.channel
      : `${inbound.channel}:${inbound.sender.id}`;
    const decided = this.#center.decide(answer.id, answer.approve, by);
    if (decided === undefined) return notPending(this.#center.get(answer.id), answer.id);
    return decided.state === "approved"
      ? `Approved ${decided.id}: running \`${decided.tool}\`.`
      : `Denied ${decided.id}: \`${decided.tool}\` will not run.`;
  }

  /** The pending approvals of one session (for `/status`). */
  pendingIn(sessionKey: string): ApprovalRecord[] {
    parseSessionKey(sessionKey);
    return this.#center.pending().filter((record) => record.sessionKey === sessionKey);
  }
}

function notPending(record: ApprovalRecord | undefined, id: string): string {
  if (record === undefined) return `There is no approval ${id}.`;
  return `Approval ${record.id} is already ${record.state}${record.reason ? ` (${record.reason})` : ""}.`;
}
