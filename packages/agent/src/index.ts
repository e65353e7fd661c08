export {
  type Agent,
  type AgentOptions,
  type AgentRunOptions,
  createAgent,
} from "./agent.js";
export type { AgentEvent, AgentRunResult, AgentStopReason } from "./agent-events.js";
export { AgentError, type AgentErrorCode, agentErrorCodes } from "./errors.js";
export {
  type BeforeModelCall,
  type BeforeModelCallContext,
  createHookRegistry,
  type HookEvent,
  type HookEvents,
  type HookHandler,
  type HookRegistry,
  type PostActingContext,
  type PostReasoningContext,
  type PreActingContext,
  type SkipToolCall,
} from "./hooks.js";
export { type BuildPromptInput, buildPrompt, formatSummaryBlock, systemPromptMessageId } from "./prompt.js";
export { cutToolOutput } from "./tool-output.js";
export type { ToolScope, ToolSource } from "./tool-source.js";
export {
  type AnyTool,
  createToolkit,
  defineTool,
  isValidToolName,
  type JsonSchemaTool,
  type Tool,
  type ToolContext,
  type ToolExecutionContext,
  type Toolkit,
  type ToolkitOptions,
  type ToolOutput,
} from "./toolkit.js";
export {
  type RollingSummary,
  WorkingMemory,
  type WorkingMemoryInit,
  type WorkingMemorySnapshot,
} from "./working-memory.js";
export { createWorkspaceFileTools, type WorkspaceFileToolsOptions } from "./workspace-file-tools.js";
export { readTextFile, type WorkspaceTarget } from "./workspace-fs.js";
export { resolveWorkspacePath } from "./workspace-path.js";
