import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { conversationHref, conversationOf } from "../conversations.js";
import { useLiveData } from "../live.js";
import { formatAgo, isoTime } from "../read.js";
import { Link } from "../router.js";
import { describeSchedule, formatInZone, formatUntil } from "../task-words.js";
import { applyTaskDetailEvent, loadTaskDetail, type Task, type TaskAction } from "../tasks.js";
import { ErrorBox } from "../ui.js";
import { FiringList } from "./task-firings.js";

/** The conversation a task speaks in: a link to its session page and, for a console chat, to the chat. */
function TaskConversation(props: { sessionKey: string }) {
  const chat = conversationOf(props.sessionKey);
  return html`<${Link} href=${`/sessions/${encodeURIComponent(props.sessionKey)}`}>${props.sessionKey}<//>
    ${chat === undefined ? null : html` · <${Link} href=${conversationHref(chat)}>open chat<//>`}`;
}

/** When a task fires next, in its time zone and from now; why not, when it will not. */
function NextFire(props: { task: Task; now: number }) {
  const { task } = props;
  if (task.state === "paused") return html`<span class="muted">paused</span>`;
  if (task.nextFireAt === undefined || task.state !== "active") return html`<span class="muted">never</span>`;
  return html`<time datetime=${isoTime(task.nextFireAt)}>${formatInZone(task.nextFireAt, task.timeZone)}</time>${" "}<span
      class="muted next-relative"
      >(${formatUntil(task.nextFireAt, props.now)})</span
    >`;
}

/** A task's instruction and its firings, followed live. */
function TaskDetailPanel(props: { task: Task; id: string; now: number }) {
  const { task } = props;
  const detail = useLiveData(
    () => loadTaskDetail(task.id),
    (current, event) => applyTaskDetailEvent(current, task.id, event),
    task.id,
  );
  const shown = detail.data?.task ?? task;
  return html`<div class="task-detail" id=${props.id}>
    <h3>Instruction</h3>
    <div class="task-instruction">${shown.instruction}</div>
    <p class="muted small">
      Created ${formatInZone(shown.createdAt, shown.timeZone)} by ${shown.createdBy || "unknown"}.
      ${shown.lastFiredAt === undefined ? null : ` Last fired ${formatAgo(shown.lastFiredAt, props.now)}.`}
    </p>
    <h3>Firings</h3>
    <${ErrorBox} error=${detail.error} />
    ${
      detail.data === undefined
        ? detail.error === undefined
          ? html`<p class="muted">Loading…</p>`
          : null
        : html`<${FiringList}
            firings=${detail.data.firings}
            timeZoneOf=${() => shown.timeZone}
            now=${props.now}
            empty="It has not fired yet."
          />`
    }
  </div>`;
}

/** Deleting asks first, in the page (a browser dialog would block the page and every live update). */
function DeleteConfirmation(props: { task: Task; onDelete: () => void; onKeep: () => void }) {
  const keep = useRef<HTMLButtonElement>(null);
  useEffect(() => keep.current?.focus(), []);
  return html`<div class="task-confirm" role="group" aria-label=${`Delete ${props.task.title}?`}>
    <span>Delete “${props.task.title}”? It will not fire again; its history stays.</span>
    <div class="actions">
      <button type="button" class="danger" onClick=${props.onDelete}>Delete task</button>
      <button type="button" class="secondary" ref=${keep} onClick=${props.onKeep}>Keep it</button>
    </div>
  </div>`;
}

/**
 * One task: its title (which opens its instruction and firings), state, conversation, schedule in words and next
 * time, and Pause or Resume, Run now and Delete.
 */
export function TaskItem(props: {
  task: Task;
  now: number;
  open: boolean;
  busy: boolean;
  onToggle: () => void;
  onAction: (action: TaskAction) => void;
}) {
  const { task } = props;
  const [confirming, setConfirming] = useState(false);
  const deleteButton = useRef<HTMLButtonElement>(null);
  const detailId = `task-detail-${task.id}`;
  const titleId = `task-title-${task.id}`;
  const act = (action: TaskAction) => () => props.onAction(action);
  return html`<li class=${`task ${task.state}`} data-task=${task.id} aria-labelledby=${titleId}>
    <div class="task-head">
      <button
        type="button"
        class="task-title"
        id=${titleId}
        aria-expanded=${props.open}
        aria-controls=${props.open ? detailId : undefined}
        onClick=${props.onToggle}
      >
        ${task.title}
      </button>
      <span class=${`state task-state ${task.state}`}>${task.state}</span>
      ${task.kind === "heartbeat" ? html`<span class="badge" title="The owner's periodic check">heartbeat</span>` : null}
      <code class="muted small task-id">${task.id}</code>
    </div>
    <dl class="facts task-facts">
      <dt>Conversation</dt>
      <dd class="key"><${TaskConversation} sessionKey=${task.sessionKey} /></dd>
      <dt>Schedule</dt>
      <dd class="task-schedule">${describeSchedule(task.schedule, task.timeZone)}</dd>
      <dt>Next</dt>
      <dd class="task-next"><${NextFire} task=${task} now=${props.now} /></dd>
    </dl>
    <div class="actions">
      ${
        task.state === "active"
          ? html`<button type="button" class="secondary" aria-label=${`Pause: ${task.title}`} disabled=${props.busy}
              onClick=${act("pause")}>Pause</button>`
          : task.state === "paused"
            ? html`<button type="button" class="secondary" aria-label=${`Resume: ${task.title}`} disabled=${props.busy}
                onClick=${act("resume")}>Resume</button>`
            : null
      }
      <button type="button" class="secondary" aria-label=${`Run now: ${task.title}`} disabled=${props.busy}
        onClick=${act("run")}>Run now</button>
      <button type="button" class="danger" aria-label=${`Delete: ${task.title}`} disabled=${props.busy}
        aria-expanded=${confirming} ref=${deleteButton} onClick=${() => setConfirming(true)}>Delete</button>
    </div>
    ${
      confirming
        ? html`<${DeleteConfirmation}
            task=${task}
            onDelete=${() => {
              setConfirming(false);
              props.onAction("delete");
            }}
            onKeep=${() => {
              setConfirming(false);
              deleteButton.current?.focus();
            }}
          />`
        : null
    }
    ${props.open ? html`<${TaskDetailPanel} task=${task} id=${detailId} now=${props.now} />` : null}
  </li>`;
}
