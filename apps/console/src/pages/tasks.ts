import "./tasks.css";
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { FiringList } from "../components/task-firings.js";
import { TaskForm } from "../components/task-form.js";
import { TaskItem } from "../components/task-item.js";
import { useLiveData } from "../live.js";
import {
  applyFiringEvent,
  applyTaskEvent,
  changeTask,
  type Firing,
  groupTasks,
  loadRecentFirings,
  loadTasks,
  type Task,
  type TaskAction,
} from "../tasks.js";
import { describeError, ErrorBox, useNow } from "../ui.js";
import { LiveBadge } from "./sessions.js";

/** How many firings of all tasks the page shows. */
const RECENT_FIRINGS = 20;

/** What an action did, in a sentence. */
const DONE: Record<TaskAction, (task: Task) => string> = {
  pause: (task) => `Paused ${task.id}: it will not fire until resumed.`,
  resume: (task) => `Resumed ${task.id}.`,
  run: (task) => `Running ${task.id} now; its firing shows in its history.`,
  delete: (task) => `Deleted ${task.id}; its history stays.`,
};

/** Counts by state in words: `2 active, 1 paused, 3 done`. */
function countsLine(tasks: readonly Task[]): string {
  const counts = new Map<string, number>();
  for (const task of tasks) counts.set(task.state, (counts.get(task.state) ?? 0) + 1);
  return ["active", "paused", "done", "cancelled"]
    .filter((state) => counts.has(state))
    .map((state) => `${counts.get(state)} ${state}`)
    .join(", ");
}

function TaskList(props: {
  tasks: readonly Task[];
  now: number;
  open: string | undefined;
  busy: string | undefined;
  onToggle: (task: Task) => void;
  onAction: (task: Task, action: TaskAction) => void;
}) {
  return html`<ul class="task-list">
    ${props.tasks.map(
      (task) => html`<${TaskItem}
        key=${task.id}
        task=${task}
        now=${props.now}
        open=${props.open === task.id}
        busy=${props.busy === task.id}
        onToggle=${() => props.onToggle(task)}
        onAction=${(action: TaskAction) => props.onAction(task, action)}
      />`,
    )}
  </ul>`;
}

/**
 * Reminders, recurring tasks and the heartbeat: the scheduled ones (active and paused) with their next time, the
 * finished ones folded below, a form for a new one, and the recent firings of all; everything follows the
 * server's live events.
 */
export function TasksPage() {
  const listing = useLiveData(loadTasks, applyTaskEvent, "tasks");
  const recent = useLiveData<readonly Firing[]>(
    () => loadRecentFirings(RECENT_FIRINGS),
    (firings, event) => applyFiringEvent(firings, event, RECENT_FIRINGS),
    "recent-firings",
  );
  const now = useNow();
  const [open, setOpen] = useState<string>();
  const [busy, setBusy] = useState<string>();
  const [outcome, setOutcome] = useState<{ ok: boolean; message: string }>();

  const act = async (task: Task, action: TaskAction) => {
    setBusy(task.id);
    setOutcome(undefined);
    try {
      await changeTask(task.id, action);
      setOutcome({ ok: true, message: DONE[action](task) });
      if (action === "run") setOpen(task.id);
    } catch (error) {
      setOutcome({ ok: false, message: `${task.id}: ${describeError(error)}` });
    } finally {
      setBusy(undefined);
    }
  };

  const tasks = listing.data ?? [];
  const { scheduled, finished } = groupTasks(tasks);
  const byId = new Map(tasks.map((task) => [task.id, task]));
  const list = (shown: readonly Task[]) => html`<${TaskList}
    tasks=${shown}
    now=${now}
    open=${open}
    busy=${busy}
    onToggle=${(task: Task) => setOpen(open === task.id ? undefined : task.id)}
    onAction=${act}
  />`;
  return html`
    <section class="tasks-page">
      <div class="title-row">
        <h1>Tasks <${LiveBadge} state=${listing.live} /></h1>
      </div>
      <${ErrorBox} error=${listing.error} />
      ${
        outcome === undefined
          ? null
          : outcome.ok
            ? html`<p class="outcome-line ok" role="status">${outcome.message}</p>`
            : html`<p class="error" role="alert">${outcome.message}</p>`
      }
      <div class="card" aria-labelledby="scheduled-tasks">
        <h2 id="scheduled-tasks">Scheduled <span class="muted small">${countsLine(tasks)}</span></h2>
        ${
          listing.data === undefined
            ? null
            : scheduled.length === 0
              ? html`<p class="muted">
                  Nothing scheduled. Create a task below, or ask the assistant in a chat (“remind me in 20 minutes…”).
                </p>`
              : list(scheduled)
        }
        ${
          finished.length === 0
            ? null
            : html`<details class="finished-tasks" open=${finished.some((task) => task.id === open) || undefined}>
                <summary>Done and cancelled (${finished.length})</summary>
                ${list(finished)}
              </details>`
        }
      </div>
      <${TaskForm}
        onCreated=${() => {
          // Live, the task arrives as an event; cut off, it is read.
          if (listing.live !== "live") listing.reload();
        }}
      />
      <div class="card">
        <h2>Recent firings</h2>
        <${ErrorBox} error=${recent.error} />
        ${
          recent.data === undefined
            ? null
            : html`<${FiringList}
                firings=${recent.data}
                timeZoneOf=${(firing: Firing) => byId.get(firing.taskId)?.timeZone}
                labelOf=${(firing: Firing) => {
                  const task = byId.get(firing.taskId);
                  return task === undefined ? firing.taskId : `${task.title} (${task.id})`;
                }}
                now=${now}
                empty="No task has fired yet."
              />`
        }
      </div>
    </section>
  `;
}
