import { AlmanacError, type AlmanacErrorOptions, type ErrorCategory } from "@almanac/core";

/**
 * Every code an {@link AgentError} can carry, with the side the failure belongs to.
 * `agent.aborted` counts as `user`: the caller cancelled the run on purpose; nothing is broken.
 */
export const agentErrorCategories = {
  /** A hook threw: hooks are our own code, so this is a bug to surface. */
  "agent.hook_failed": "internal",
  /** A step before a model call threw (e.g. the transcript could not be written); the cause says why. */
  "agent.step_failed": "internal",
  /** A tool definition is unusable (bad name, not an object schema). */
  "agent.tool_invalid": "internal",
  /** Two tools in one toolkit share a name. */
  "agent.tool_duplicate": "internal",
  /** A model's stream ended without its `finish` event. */
  "agent.stream_incomplete": "internal",
  /** The run's abort signal fired; the run stopped between steps. */
  "agent.aborted": "user",
} as const satisfies Record<string, ErrorCategory>;

/** A stable code of an {@link AgentError}. */
export type AgentErrorCode = keyof typeof agentErrorCategories;

/**
 * Base error of the agent package. Its category follows from the code
 * (see {@link agentErrorCategories}), so callers can branch on `code` alone.
 */
export class AgentError extends AlmanacError {
  declare readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options: AlmanacErrorOptions = {}) {
    super(agentErrorCategories[code], code, message, options);
  }
}
