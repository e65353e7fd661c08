export {
  createLaneScheduler,
  type LaneScheduler,
  type LaneSchedulerCloseResult,
  type LaneSchedulerOptions,
  type LaneSchedulerStats,
  type LaneStats,
  type StartTimer,
} from "./lane-scheduler.js";
export {
  type OpenTurn,
  SESSION_SNAPSHOT_VERSION,
  type SessionSnapshot,
  type SessionStats,
  sessionSnapshotSchema,
  sessionStatsSchema,
  type TranscriptLine,
  transcriptLineSchema,
} from "./session-snapshot.js";
export {
  createSessionStore,
  type LoadResult,
  type SessionStore,
  type SessionStoreOptions,
  type SessionSummary,
} from "./session-store.js";
