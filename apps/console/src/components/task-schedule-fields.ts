import { html } from "htm/preact";
import { useMemo, useState } from "preact/hooks";
import type { ApiError } from "../api.js";
import type { TaskWhen } from "../tasks.js";

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

/** A new task's schedule as typed: which way it is told when to fire, its text, and the time zone. */
export interface TaskSchedule {
  readonly whenKind: TaskWhen["kind"];
  /** The text typed for `whenKind` (each way keeps its own, so switching back finds it again). */
  readonly value: string;
  readonly timeZone: string;
  setWhenKind(kind: TaskWhen["kind"]): void;
  setValue(value: string): void;
  setTimeZone(timeZone: string): void;
}

/** The schedule fields' state, the browser's time zone to begin with. */
export function useTaskSchedule(): TaskSchedule {
  const [whenKind, setWhenKind] = useState<TaskWhen["kind"]>("in");
  const [values, setValues] = useState<Record<TaskWhen["kind"], string>>({
    at: "",
    in: "",
    every: "",
    cron: "",
  });
  const [timeZone, setTimeZone] = useState(browserTimeZone);
  return {
    whenKind,
    value: values[whenKind],
    timeZone,
    setWhenKind,
    setValue: (text) => setValues((previous) => ({ ...previous, [whenKind]: text })),
    setTimeZone,
  };
}

/** What {@link TaskScheduleFields} shows and whom it tells. */
export interface TaskScheduleFieldsProps {
  readonly schedule: TaskSchedule;
  /** The server's refusal of the schedule last sent, shown under it. */
  readonly refusal: ApiError | undefined;
  /** A schedule field was edited. */
  onEdited(): void;
}

/** When a new task fires (at a time, in, every, cron) and in which time zone. */
export function TaskScheduleFields(props: TaskScheduleFieldsProps) {
  const { schedule, refusal } = props;
  const { whenKind } = schedule;
  const zones = useMemo(knownTimeZones, []);
  const when = WHEN_KINDS.find((entry) => entry.kind === whenKind) ?? WHEN_KINDS[0]!;
  return html`<fieldset class="field task-when">
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
                schedule.setWhenKind(entry.kind);
                props.onEdited();
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
        value=${schedule.value}
        placeholder=${whenKind === "in" ? "20 minutes" : whenKind === "every" ? "1 hour" : whenKind === "cron" ? "30 8 * * 1" : undefined}
        aria-invalid=${refusal !== undefined}
        aria-describedby=${refusal === undefined ? "task-when-hint" : "task-when-hint task-when-refusal"}
        autocomplete="off"
        onInput=${(event: Event) => {
          schedule.setValue((event.currentTarget as HTMLInputElement).value);
          props.onEdited();
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
        value=${schedule.timeZone}
        autocomplete="off"
        onInput=${(event: Event) => {
          schedule.setTimeZone((event.currentTarget as HTMLInputElement).value);
          props.onEdited();
        }}
      />
      <datalist id="task-time-zones">${zones.map((zone) => html`<option value=${zone}></option>`)}</datalist>
    </div>`;
}
