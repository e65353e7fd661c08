import { AlmanacError, type AlmanacErrorOptions, type CodesOf, defineErrorCodes } from "@almanac/core";

/**
 * Every code the agent package throws, with the side the failure belongs to. `agent.aborted` counts as `user`:
 * the caller cancelled the run on purpose; nothing is broken (HTTP 499, the client closed the request).
 */
export const agentErrorCodes = defineErrorCodes({
  /** A hook threw: hooks are our own code, so this is a bug to surface. */
  "agent.hook_failed": { category: "internal" },
  /** A step before a model call threw (e.g. the transcript could not be written); the cause says why. */
  "agent.step_failed": { category: "internal" },
  /** A tool definition is unusable (bad name, not an object schema). */
  "agent.tool_invalid": { category: "internal" },
  /** Two tools in one toolkit share a name. */
  "agent.tool_duplicate": { category: "internal" },
  /** A model's stream ended without its `finish` event. */
  "agent.stream_incomplete": { category: "internal" },
  /** The run's abort signal fired; the run stopped between steps. */
  "agent.aborted": { category: "user", status: 499 },
  /** An option of the agent or a tool is out of range. */
  "config.invalid": { category: "user" },
  /** Working memory restored from a snapshot does not have the expected shape. */
  "memory.invalid": { category: "user" },
  /** Workspace file tools: the model asked for something the workspace cannot give (told to it as a tool error). */
  "workspace.not_found": { category: "user", status: 404 },
  "workspace.not_a_file": { category: "user" },
  "workspace.not_a_directory": { category: "user" },
  "workspace.permission_denied": { category: "user", status: 403 },
  "workspace.binary_file": { category: "user" },
  "workspace.path_outside": { category: "user", status: 403 },
  "workspace.root_missing": { category: "user" },
});

declare module "@almanac/core" {
  interface AlmanacErrorCodes extends CodesOf<typeof agentErrorCodes> {}
}

/** A code an {@link AgentError} carries. */
export type AgentErrorCode = Extract<keyof typeof agentErrorCodes, `agent.${string}`>;

/**
 * Base error of the agent package. Its category follows from the code
 * (see {@link agentErrorCodes}), so callers can branch on `code` alone.
 */
export class AgentError extends AlmanacError {
  declare readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options: AlmanacErrorOptions = {}) {
    super(agentErrorCodes[code].category, code, message, options);
  }
}
