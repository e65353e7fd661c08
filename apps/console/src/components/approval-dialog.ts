import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { api } from "../api.js";
import {
  type Approval,
  type DecisionOutcome,
  readApproval,
  readApprovals,
  withApproval,
} from "../approvals.js";
import { useLiveEvents } from "../live.js";
import { asRecord } from "../read.js";
import { useNow } from "../ui.js";
import {
  ApprovalDetails,
  answerApproval,
  type Decision,
  DecisionButtons,
  OutcomeLine,
} from "./approval-card.js";

/**
 * The approvals waiting for the owner, oldest first, followed live: every `approval-changed` event adds, updates
 * or drops one, and every (re)connect reads the list again (`GET /api/approvals`), since changes made while the
 * stream was cut were not seen. Events that arrive while that read is under way are applied over its answer.
 */
export function usePendingApprovals(): readonly Approval[] {
  const [pending, setPending] = useState<Approval[]>([]);
  // The changes seen since the last read began; undefined when no read is under way.
  const sinceRead = useRef<Approval[] | undefined>(undefined);
  useLiveEvents((event) => {
    if (event.type === "snapshot") {
      const seen: Approval[] = [];
      sinceRead.current = seen;
      api("/api/approvals?limit=1").then(
        (body) => {
          if (sinceRead.current !== seen) return; // a later reconnect's read answers instead
          sinceRead.current = undefined;
          setPending(seen.reduce(withApproval, readApprovals(asRecord(body).pending)));
        },
        () => {
          // The events still say what changes; the list fills in from them.
          if (sinceRead.current === seen) sinceRead.current = undefined;
        },
      );
      return;
    }
    if (event.type !== "approval-changed") return;
    const approval = readApproval(event.data.approval);
    if (approval === undefined) return;
    sinceRead.current?.push(approval);
    setPending((previous) => withApproval(previous, approval));
  });
  return pending;
}

/**
 * The modal for one approval. A native `<dialog>` opened with `showModal()`: the page behind is inert, Escape
 * closes it (the approval keeps waiting). Focus goes to its title, not to a button: the dialog opens by itself,
 * and a key pressed as it opens (Enter in the chat box) must not answer it. Focus returns where it was on close.
 */
function ApprovalModal(props: {
  approval: Approval;
  /** Approvals waiting besides this one. */
  more: number;
  busy: boolean;
  outcome: DecisionOutcome | undefined;
  onDecide: (decision: Decision) => void;
  onClose: () => void;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const title = useRef<HTMLHeadingElement>(null);
  const closeButton = useRef<HTMLButtonElement>(null);
  const now = useNow();
  useEffect(() => {
    const element = dialog.current;
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : undefined;
    element?.showModal();
    title.current?.focus();
    // Removing an open dialog takes it out of the top layer; only the focus needs putting back.
    return () => {
      if (before?.isConnected) before.focus();
    };
  }, []);
  useEffect(() => {
    if (props.outcome !== undefined) closeButton.current?.focus();
  }, [props.outcome]);
  const { approval, outcome } = props;
  return html`
    <dialog
      ref=${dialog}
      class="approval-dialog"
      aria-labelledby="approval-dialog-title"
      data-approval=${approval.id}
      onClose=${props.onClose}
    >
      <h2 id="approval-dialog-title" tabindex="-1" ref=${title}>Approval needed: ${approval.id}</h2>
      <p class="muted small">
        The assistant wants to run a tool that needs your approval; the turn waits for your answer.
        ${props.more > 0 ? ` ${props.more} more waiting.` : ""}
      </p>
      <${ApprovalDetails} approval=${approval} now=${now} onNavigate=${props.onClose} />
      <${OutcomeLine} outcome=${outcome} />
      <div class="actions">
        ${
          outcome === undefined
            ? html`<${DecisionButtons} busy=${props.busy} onDecide=${props.onDecide} />
                <button type="button" class="secondary" onClick=${props.onClose}>Later</button>`
            : html`<button type="button" ref=${closeButton} onClick=${props.onClose}>Close</button>`
        }
      </div>
    </dialog>
  `;
}

/**
 * Asks the owner about each approval as it arrives, on whichever page is open: the oldest waiting first. An
 * approval answered elsewhere (another tab, a chat, the API) or expired closes its dialog; one answered here
 * stays to show the outcome until closed. Escape or Later sets it aside for this tab; it stays on the Tools page.
 */
export function ApprovalDialog(props: { pending: readonly Approval[] }) {
  const [setAside, setSetAside] = useState<ReadonlySet<string>>(new Set());
  // The approval answered here: kept on screen while the answer is on its way, and then to show the outcome.
  const [held, setHeld] = useState<{ approval: Approval; outcome?: DecisionOutcome }>();
  const waiting = props.pending.filter((approval) => !setAside.has(approval.id));
  const shown = held?.approval ?? waiting[0];
  if (shown === undefined) return null;
  const decide = async (decision: Decision) => {
    setHeld({ approval: shown });
    const outcome = await answerApproval(shown, decision);
    setHeld({ approval: shown, outcome });
  };
  const close = () => {
    setSetAside((previous) => new Set(previous).add(shown.id));
    setHeld((previous) => (previous?.approval.id === shown.id ? undefined : previous));
  };
  return html`<${ApprovalModal}
    key=${shown.id}
    approval=${shown}
    more=${waiting.filter((approval) => approval.id !== shown.id).length}
    busy=${held !== undefined && held.outcome === undefined}
    outcome=${held?.outcome}
    onDecide=${decide}
    onClose=${close}
  />`;
}
