// Reminders, recurring tasks and the heartbeat: a durable schedule, delivered exactly once.
export {
  describeDuration,
  describeSchedule,
  formatLocal,
  isTimeZone,
  MIN_INTERVAL_MS,
  nextFireAfter,
  nextFireTimes,
  parseDuration,
  type Schedule,
  ScheduleError,
  type ScheduleRequest,
  scheduleFrom,
} from "./schedule.js";
export { isFinished } from "./task-journal.js";
export {
  type NewTask,
  systemClock,
  type TaskClock,
  type TaskRunner,
  TaskScheduler,
  type TaskSchedulerOptions,
} from "./task-scheduler.js";
export { createTaskTools, type TaskToolOptions } from "./task-tools.js";
export type { FiringRecord, TaskEvent, TaskRecord } from "./task-types.js";
