import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { decideApproval } from "../api.js";
import {
  type Approval,
  type DecisionOutcome,
  decidedOutcome,
  prettyArguments,
  refusedOutcome,
  timeLeftOf,
} from "../approvals.js";
import { formatClock, formatTime } from "../read.js";
import { Link } from "../router.js";
import "./approvals.css";

/** The owner's answer to a waiting call. */
export type Decision = "approve" | "deny";

/**
 * What a waiting call is: the tool, the session it belongs to (a link to its page), when it was asked, the time
 * left while it waits (or how it was settled), and its arguments whole, laid out for reading.
 */
export function ApprovalDetails(props: {
  approval: Approval;
  now: number;
  /** Runs when the session link navigates in the app (the dialog steps aside). */
  onNavigate?: () => void;
}) {
  const { approval } = props;
  return html`
    <dl class="facts approval-facts">
      <dt>Tool</dt>
      <dd><code class="approval-tool">${approval.tool}</code></dd>
      <dt>Session</dt>
      <dd class="key">
        <${Link} href=${`/sessions/${encodeURIComponent(approval.sessionKey)}`} onNavigate=${props.onNavigate}
          >${approval.sessionKey}<//
        >
      </dd>
      <dt>Asked</dt>
      <dd title=${formatTime(approval.requestedAt)}>${formatClock(approval.requestedAt, props.now)}</dd>
      ${
        approval.state === "pending"
          ? html`<dt>Time left</dt>
              <dd>
                <span class="time-left" role="timer" title=${`Counts as denied at ${formatTime(approval.expiresAt)}`}
                  >${timeLeftOf(approval, props.now)}</span
                >
              </dd>`
          : html`<dt>State</dt>
              <dd><span class=${`state ${approval.state}`}>${approval.state}</span></dd>`
      }
    </dl>
    <div class="approval-arguments-label muted small">Arguments</div>
    <pre class="approval-arguments">${prettyArguments(approval.arguments)}</pre>
  `;
}

/** Approve and Deny, disabled while an answer is on its way. */
export function DecisionButtons(props: { busy: boolean; onDecide: (decision: Decision) => void }) {
  return html`
    <button type="button" class="approve" disabled=${props.busy} onClick=${() => props.onDecide("approve")}>
      Approve
    </button>
    <button type="button" class="danger deny" disabled=${props.busy} onClick=${() => props.onDecide("deny")}>
      Deny
    </button>
  `;
}

/** The outcome of an answer in a sentence: a status when it settled the call, an alert when it did not. */
export function OutcomeLine(props: { outcome: DecisionOutcome | undefined }) {
  const { outcome } = props;
  if (outcome === undefined) return null;
  return outcome.kind === "decided"
    ? html`<p class="outcome decided" role="status">${outcome.message}</p>`
    : html`<p class=${`outcome ${outcome.kind}`} role="alert">${outcome.message}</p>`;
}

/** Sends the owner's answer to `POST /api/approvals/{id}` and never rejects: every end is an outcome. */
export async function answerApproval(approval: Approval, decision: Decision): Promise<DecisionOutcome> {
  try {
    return decidedOutcome(await decideApproval(approval.id, decision), approval);
  } catch (error) {
    return refusedOutcome(error);
  }
}

/** Answers approvals one at a time: which one is on its way, and the outcome of the last. */
export function useDecision(): {
  readonly busy: string | undefined;
  readonly last: { readonly id: string; readonly outcome: DecisionOutcome } | undefined;
  decide(approval: Approval, decision: Decision): Promise<void>;
} {
  const [busy, setBusy] = useState<string>();
  const [last, setLast] = useState<{ id: string; outcome: DecisionOutcome }>();
  const decide = async (approval: Approval, decision: Decision) => {
    setBusy(approval.id);
    const outcome = await answerApproval(approval, decision);
    setBusy(undefined);
    setLast({ id: approval.id, outcome });
  };
  return { busy, last, decide };
}
