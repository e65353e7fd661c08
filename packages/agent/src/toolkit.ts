import {
  describeError,
  type Logger,
  silentLogger,
  type ToolCallBlock,
  type ToolResultBlock,
  type ToolSpec,
} from "@almanac/core";
import { z } from "zod";
import { AgentError } from "./errors.js";
import { positiveInteger } from "./positive-integer.js";
import { cutToolOutput } from "./tool-output.js";

/** What a running tool gets besides its arguments. */
export interface ToolContext {
  /** Fires when the run is cancelled or the tool's time is up; long work should stop. */
  readonly signal: AbortSignal;
  /** The id of the call being answered. */
  readonly callId: string;
  readonly logger: Logger;
}

/** What a tool returns: plain text, or text flagged as an error for the model to react to. */
export type ToolOutput = string | { readonly content: string; readonly isError?: boolean };

/** A tool the model can call: a name, a description and a zod object schema for its arguments. */
export interface Tool<Schema extends z.ZodObject = z.ZodObject> {
  readonly name: string;
  readonly description: string;
  readonly parameters: Schema;
  /** Overrides the toolkit's timeout for this tool. */
  readonly timeoutMs?: number;
  /** The owner must approve each call before it runs (the turn pauses until they answer). Default false. */
  readonly requiresApproval?: boolean;
  /** Runs with arguments already validated against `parameters`. May throw: the toolkit reports it. */
  execute(args: z.output<Schema>, context: ToolContext): Promise<ToolOutput>;
}

/**
 * A tool whose arguments are described by a JSON Schema it was given (a tool of an MCP server) rather than a zod
 * schema: the toolkit checks only that the arguments are a JSON object; the tool's owner validates the rest.
 */
export interface JsonSchemaTool {
  readonly name: string;
  readonly description: string;
  /** The arguments' JSON Schema as the model sees it: an object schema, already made acceptable to providers. */
  readonly inputSchema: Readonly<Record<string, unknown>>;
  readonly timeoutMs?: number;
  /** The owner must approve each call before it runs (the turn pauses until they answer). Default false. */
  readonly requiresApproval?: boolean;
  execute(args: Readonly<Record<string, unknown>>, context: ToolContext): Promise<ToolOutput>;
}

/** Any tool a toolkit holds. */
export type AnyTool = Tool | JsonSchemaTool;

function isJsonSchemaTool(tool: AnyTool): tool is JsonSchemaTool {
  return "inputSchema" in tool;
}

const toolNamePattern = /^[a-zA-Z0-9_-]{1,64}$/;

/** True for a name every provider accepts for a function: 1-64 letters, digits, "_" or "-". */
export function isValidToolName(name: string): boolean {
  return toolNamePattern.test(name);
}

/**
 * Defines a tool; the schema types the arguments `execute` receives.
 * Throws `AgentError` (`agent.tool_invalid`) for a name providers would reject.
 */
export function defineTool<Schema extends z.ZodObject>(tool: Tool<Schema>): Tool<Schema> {
  if (!toolNamePattern.test(tool.name)) {
    throw new AgentError(
      "agent.tool_invalid",
      `Tool name "${tool.name}" is invalid: use 1-64 letters, digits, "_" or "-".`,
    );
  }
  if (tool.timeoutMs !== undefined) positiveInteger(tool.timeoutMs, 1, `defineTool ${tool.name}: timeoutMs`);
  return tool;
}

/** Options of {@link createToolkit}. */
export interface ToolkitOptions {
  /** Time a tool may run before its call is answered with a timeout error. Default 60 000 ms. */
  readonly timeoutMs?: number;
  /** Longest tool output passed back to the model; longer output is cut with a marker. Default 100 000. */
  readonly maxOutputChars?: number;
}

/** What the agent passes when it executes a call. */
export interface ToolExecutionContext {
  readonly signal?: AbortSignal;
  readonly logger?: Logger;
}

/** A set of tools with unique names, executed on the model's behalf. */
export interface Toolkit {
  /** The tools as the model sees them (JSON Schema of the arguments). */
  specs(): readonly ToolSpec[];
  has(name: string): boolean;
  /** True when a call of the named tool needs the owner's approval before it runs. */
  requiresApproval(name: string): boolean;
  /**
   * Answers one call. Never throws: unknown tools, bad arguments, failures, timeouts and
   * cancellation all come back as error results the model can read and act on.
   */
  execute(call: ToolCallBlock, context?: ToolExecutionContext): Promise<ToolResultBlock>;
}

function toSpec(tool: AnyTool): ToolSpec {
  if (isJsonSchemaTool(tool))
    return Object.freeze({ name: tool.name, description: tool.description, parameters: tool.inputSchema });
  const { $schema: _schema, ...parameters } = z.toJSONSchema(tool.parameters, { io: "input" });
  return Object.freeze({ name: tool.name, description: tool.description, parameters });
}

function formatIssues(error: z.ZodError): string {
  return error.issues
    .map((issue) => `- ${issue.path.length === 0 ? "(arguments)" : issue.path.join(".")}: ${issue.message}`)
    .join("\n");
}

type ParsedArguments =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problem: string };

function parseArguments(text: string): ParsedArguments {
  // Some models send an empty string for a call without arguments.
  if (text.trim() === "") return { ok: true, value: {} };
  try {
    const value: unknown = JSON.parse(text);
    return { ok: true, value };
  } catch (error) {
    return { ok: false, problem: describeError(error) };
  }
}

/** The arguments as the tool takes them, or what is wrong with them. */
function validateArguments(
  tool: AnyTool,
  value: unknown,
):
  | { readonly success: true; readonly data: Readonly<Record<string, unknown>> }
  | { readonly success: false; readonly problem: string } {
  if (isJsonSchemaTool(tool)) {
    const isObject = typeof value === "object" && value !== null && !Array.isArray(value);
    return isObject
      ? { success: true, data: value as Readonly<Record<string, unknown>> }
      : { success: false, problem: "- (arguments): expected a JSON object" };
  }
  const validated = tool.parameters.safeParse(value);
  return validated.success
    ? { success: true, data: validated.data }
    : { success: false, problem: formatIssues(validated.error) };
}

/** The outcome of racing a tool against its timeout and the run's signal. */
type Settled =
  | { readonly kind: "output"; readonly output: ToolOutput }
  | { readonly kind: "thrown"; readonly error: unknown }
  | { readonly kind: "timeout" }
  | { readonly kind: "aborted" };

async function runWithLimits(
  tool: AnyTool,
  args: Readonly<Record<string, unknown>>,
  call: ToolCallBlock,
  timeoutMs: number,
  runSignal: AbortSignal | undefined,
  logger: Logger,
): Promise<Settled> {
  const controller = new AbortController();
  const signal =
    runSignal === undefined ? controller.signal : AbortSignal.any([runSignal, controller.signal]);
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const limits = new Promise<Settled>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new DOMException(`${tool.name} timed out after ${timeoutMs} ms`, "TimeoutError"));
      resolve({ kind: "timeout" });
    }, timeoutMs);
    onAbort = () => resolve({ kind: "aborted" });
    runSignal?.addEventListener("abort", onAbort, { once: true });
  });
  const work = (async (): Promise<Settled> => {
    try {
      const output = await (tool as JsonSchemaTool).execute(args, { signal, callId: call.id, logger });
      return { kind: "output", output };
    } catch (error) {
      return { kind: "thrown", error };
    }
  })();
  try {
    return await Promise.race([work, limits]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) runSignal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Creates a toolkit. Duplicate names throw `AgentError` (`agent.tool_duplicate`): that is a
 * programming error, not something to report to the model.
 */
export function createToolkit(tools: readonly AnyTool[], options: ToolkitOptions = {}): Toolkit {
  const defaultTimeoutMs = positiveInteger(options.timeoutMs, 60_000, "createToolkit: timeoutMs");
  const maxOutputChars = positiveInteger(options.maxOutputChars, 100_000, "createToolkit: maxOutputChars");
  const byName = new Map<string, AnyTool>();
  for (const tool of tools) {
    if (byName.has(tool.name)) {
      throw new AgentError(
        "agent.tool_duplicate",
        `Two tools are named "${tool.name}"; tool names must be unique.`,
      );
    }
    byName.set(tool.name, tool);
  }
  // JSON Schemas are built on first use (~1 ms for a handful of tools): a caller that already holds equal
  // specs for this set of tools (the server's agent runtime keeps them per scope) never pays for them.
  let specs: readonly ToolSpec[] | undefined;
  const names = [...byName.keys()];

  return {
    specs: () => {
      specs ??= Object.freeze(tools.map(toSpec));
      return specs;
    },
    has: (name) => byName.has(name),
    requiresApproval: (name) => byName.get(name)?.requiresApproval === true,

    async execute(call, context = {}) {
      const logger = (context.logger ?? silentLogger).child({ tool: call.name, callId: call.id });
      const answer = (content: string, isError: boolean): ToolResultBlock => ({
        type: "tool_result",
        callId: call.id,
        content: cutToolOutput(content, maxOutputChars),
        ...(isError ? { isError: true } : {}),
      });

      const tool = byName.get(call.name);
      if (tool === undefined) {
        const available = names.length === 0 ? "none" : names.join(", ");
        return answer(`Unknown tool "${call.name}". Available tools: ${available}.`, true);
      }
      const parsed = parseArguments(call.arguments);
      if (!parsed.ok) {
        return answer(
          `The arguments of ${tool.name} are not valid JSON (${parsed.problem}). Send one JSON object matching the tool's parameters.`,
          true,
        );
      }
      const validated = validateArguments(tool, parsed.value);
      if (!validated.success) {
        return answer(
          `The arguments of ${tool.name} do not match its parameters:\n${validated.problem}\nFix these and call the tool again.`,
          true,
        );
      }
      if (context.signal?.aborted) return answer(`${tool.name} was not run: the run was cancelled.`, true);

      const timeoutMs = tool.timeoutMs ?? defaultTimeoutMs;
      const settled = await runWithLimits(tool, validated.data, call, timeoutMs, context.signal, logger);
      switch (settled.kind) {
        case "output":
          return typeof settled.output === "string"
            ? answer(settled.output, false)
            : answer(settled.output.content, settled.output.isError === true);
        case "thrown":
          logger.warn({ error: describeError(settled.error) }, "tool failed");
          return answer(`${tool.name} failed: ${describeError(settled.error)}`, true);
        case "timeout":
          logger.warn({ timeoutMs }, "tool timed out");
          return answer(`${tool.name} did not finish within ${timeoutMs} ms and was stopped.`, true);
        case "aborted":
          return answer(`${tool.name} was stopped: the run was cancelled.`, true);
      }
    },
  };
}
