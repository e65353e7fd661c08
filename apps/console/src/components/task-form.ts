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
} from "../tasks.js";
import { ErrorBox, useLoad } from "../ui.js";
import { TaskScheduleFields, useTaskSchedule } from "./task-schedule-fields.js";

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
  const schedule = useTaskSchedule();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<string>();

  const { value } = schedule;
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
        when: { kind: schedule.whenKind, value },
        timeZone: schedule.timeZone,
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
    <${TaskScheduleFields} schedule=${schedule} refusal=${refusal} onEdited=${edited} />
    ${refusal === undefined ? html`<${ErrorBox} error=${error} />` : null}
    ${created ? html`<p class="ok" role="status">${created}</p>` : null}
    <div class="actions">
      <button type="submit" disabled=${!ready}>${busy ? "Creating…" : "Create task"}</button>
    </div>
  </form>`;
}
