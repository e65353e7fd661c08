import { html } from "htm/preact";
import { useMemo, useState } from "preact/hooks";
import { ApiError } from "../api.js";
import {
  conversationOf,
  newConversationId,
  rememberedConversation,
  webSessionKey,
} from "../conversations.js";
import {
  conversationChoices,
  createTask,
  loadSessionSummaries,
  type SessionSummary,
  type Task,
  type TaskWhen,
} from "../tasks.js";
import { ErrorBox, useLoad } from "../ui.js";

/** The ways a task can be told when to fire, as the form offers them: what each is called and what to type. */
const WHEN_KINDS: ReadonlyArray<{
  readonly kind: TaskWhen["kind"];
  readonly choice: string;
  readonly label: string;
  readonly hint: string;
}> = [
  { kind: "at", choice: "At a time", label: "Date and time", hint: "Local time in the time zone below." },
  { kind: "in", choice: "In", label: "Delay", hint: "Like 20 minutes, 2h or 90s; fires once." },
  { kind: "every", choice: "Every", label: "Interval", hint: "Like 30 minutes or 1 day; at least 1 minute." },
  {
    kind: "cron",
    choice: "Cron",
    label: "Cron expression",
    hint: "Five fields: minute hour day-of-month month day-of-week, like 30 8 * * 1 (Mondays 08:30).",
  },
];

/** The browser's time zone, the form's default (the server would use its own). */
function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** Every time zone the browser knows, for the time zone field's suggestions. */
function knownTimeZones(): string[] {
  try {
    return Intl.supportedValuesOf("timeZone");
  } catch {
    return [];
  }
}

/**
 * The console's own conversation, the form's default: the one this browser had open last, else its most recent
 * chat, else `fresh` (a new one: the task's first turn starts it).
 */
function ownConversationKey(sessions: readonly SessionSummary[], fresh: string): string {
  const remembered = rememberedConversation();
  if (remembered !== undefined) return webSessionKey(remembered);
  const chats = sessions
    .filter((session) => conversationOf(session.key) !== undefined)
    .sort((a, b) => (b.lastActivity ?? 0) - (a.lastActivity ?? 0));
  return chats[0]?.key ?? fresh;
}

/** A refusal the form shows beside the field it is about, in the server's words. */
function isScheduleRefusal(error: unknown): error is ApiError {
  return error instanceof ApiError && error.code === "task.schedule_invalid";
}

/**
 * A new task: the conversation it belongs to (the console's own by default), what the assistant is to do, and
 * when. The server reads the schedule; when it refuses one, its message (which says what to send) is shown
 * under the schedule.
 */
export function TaskForm(props: { onCreated: (task: Task | undefined) => void }) {
  const sessions = useLoad(loadSessionSummaries, "task-form-sessions");
  const [fresh] = useState(() => webSessionKey(newConversationId()));
  const ownKey = ownConversationKey(sessions.data ?? [], fresh);
  const choices = useMemo(() => conversationChoices(sessions.data ?? [], ownKey), [sessions.data, ownKey]);
  // Undefined until a conversation is picked: the console's own, whichever that turns out to be once listed.
  const [picked, setPicked] = useState<string>();
  const sessionKey = picked ?? ownKey;
  const [title, setTitle] = useState("");
  const [instruction, setInstruction] = useState("");
  const [whenKind, setWhenKind] = useState<TaskWhen["kind"]>("in");
  const [values, setValues] = useState<Record<TaskWhen["kind"], string>>({
    at: "",
    in: "",
    every: "",
    cron: "",
  });
  const [timeZone, setTimeZone] = useState(browserTimeZone);
  const zones = useMemo(knownTimeZones, []);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<string>();

  const when = WHEN_KINDS.find((entry) => entry.kind === whenKind) ?? WHEN_KINDS[0]!;
  const value = values[whenKind];
  const refusal = isScheduleRefusal(error) ? error : undefined;
  const ready = instruction.trim() !== "" && value.trim() !== "" && !busy;

  const submit = async (event: Event) => {
    event.preventDefault();
    if (!ready) return;
    setBusy(true);
    setError(undefined);
    setCreated(undefined);
    try {
      const task = await createTask({
        sessionKey,
        instruction,
        title,
        when: { kind: whenKind, value },
        timeZone,
      });
      setCreated(task === undefined ? "Task created." : `Created ${task.id}: ${task.title}.`);
      setInstruction("");
      setTitle("");
      props.onCreated(task);
    } catch (caught) {
      setError(caught);
    } finally {
      setBusy(false);
    }
  };

  // Editing what the server refused takes its message away; the new text is checked when sent.
  const edited = () => {
    if (refusal !== undefined) setError(undefined);
    setCreated(undefined);
  };

  return html`<form class="card task-form" aria-labelledby="new-task-title" onSubmit=${submit}>
    <h2 id="new-task-title">New task</h2>
    <div class="field">
      <label for="task-conversation">Conversation</label>
      <select
        id="task-conversation"
        value=${sessionKey}
        onChange=${(event: Event) => setPicked((event.currentTarget as HTMLSelectElement).value)}
      >
        ${choices.map(
          (choice) => html`<option value=${choice.sessionKey} selected=${choice.sessionKey === sessionKey}>
            ${choice.label}
          </option>`,
        )}
      </select>
      <${ErrorBox} error=${sessions.error} />
    </div>
    <div class="field">
      <label for="task-instruction">Instruction</label>
      <textarea
        id="task-instruction"
        rows="2"
        placeholder="What the assistant is to do, e.g. Remind me to stretch."
        value=${instruction}
        onInput=${(event: Event) => {
          setInstruction((event.currentTarget as HTMLTextAreaElement).value);
          setCreated(undefined);
        }}
      ></textarea>
    </div>
    <div class="field">
      <label for="task-title">Title <span class="muted small">(optional)</span></label>
      <input
        id="task-title"
        maxlength="80"
        placeholder="The instruction's start"
        value=${title}
        onInput=${(event: Event) => setTitle((event.currentTarget as HTMLInputElement).value)}
      />
    </div>
    <fieldset class="field task-when">
      <legend>When</legend>
      <div class="when-kinds">
        ${WHEN_KINDS.map(
          (entry) => html`<label class="when-kind">
            <input
              type="radio"
              name="task-when"
              value=${entry.kind}
              checked=${entry.kind === whenKind}
              onChange=${() => {
                setWhenKind(entry.kind);
                edited();
              }}
            />
            ${entry.choice}
          </label>`,
        )}
      </div>
      <label for="task-when-value">${when.label}</label>
      <input
        key=${whenKind}
        id="task-when-value"
        type=${whenKind === "at" ? "datetime-local" : "text"}
        value=${value}
        placeholder=${whenKind === "in" ? "20 minutes" : whenKind === "every" ? "1 hour" : whenKind === "cron" ? "30 8 * * 1" : undefined}
        aria-invalid=${refusal !== undefined}
        aria-describedby=${refusal === undefined ? "task-when-hint" : "task-when-hint task-when-refusal"}
        autocomplete="off"
        onInput=${(event: Event) => {
          const text = (event.currentTarget as HTMLInputElement).value;
          setValues((previous) => ({ ...previous, [whenKind]: text }));
          edited();
        }}
      />
      <p id="task-when-hint" class="muted small hint">${when.hint}</p>
      ${
        refusal === undefined
          ? null
          : html`<p id="task-when-refusal" class="error schedule-refusal" role="alert">${refusal.message}</p>`
      }
    </fieldset>
    <div class="field">
      <label for="task-time-zone">Time zone</label>
      <input
        id="task-time-zone"
        list="task-time-zones"
        value=${timeZone}
        autocomplete="off"
        onInput=${(event: Event) => {
          setTimeZone((event.currentTarget as HTMLInputElement).value);
          edited();
        }}
      />
      <datalist id="task-time-zones">${zones.map((zone) => html`<option value=${zone}></option>`)}</datalist>
    </div>
    ${refusal === undefined ? html`<${ErrorBox} error=${error} />` : null}
    ${created ? html`<p class="ok" role="status">${created}</p>` : null}
    <div class="actions">
      <button type="submit" disabled=${!ready}>${busy ? "Creating…" : "Create task"}</button>
    </div>
  </form>`;
}
