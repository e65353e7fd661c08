import { type AnyTool, createToolkit, type Toolkit } from "@almanac/agent";
import type { ToolSpec } from "@almanac/core";
import type { MemoryScope } from "@almanac/memory-files";

/**
 * Where a turn's tools come from, on the server: the memory tools, the workspace file tools, web_fetch, each MCP
 * server. A source is asked for its tools per turn, with the session's whole memory scope, and answers from what
 * it holds (never a network round trip).
 */
export interface ServerToolSource {
  /** Shown in `GET /api/tools` (`memory`, `workspace`, `web`, `mcp`, `tasks`, `files`). */
  readonly name: string;
  /**
   * The tools for a turn of `sessionKey` in `scope`. The tools' names and specs must depend on the scope only
   * (they are cached per scope); what a tool does may depend on the session (tasks belong to their conversation).
   */
  tools(scope: MemoryScope, sessionKey: string): readonly AnyTool[];
}

/** One finished tool call, for the metrics. */
export interface ToolCallRecord {
  readonly tool: string;
  readonly source: string;
  readonly outcome: "ok" | "error";
  readonly seconds: number;
}

/** Options of {@link ToolCatalog}. */
export interface ToolCatalogOptions {
  /** Changes whenever a source's tools do (an MCP server connected, went down, changed its list). */
  readonly revision?: () => number;
  /** Told of every call a turn made (not of calls a hook answered, such as a refused approval). */
  readonly onCall?: (record: ToolCallRecord) => void;
}

/** One tool as `GET /api/tools` lists it. */
export interface ToolListing {
  readonly name: string;
  readonly source: string;
  readonly description: string;
  readonly requiresApproval: boolean;
  /** Where it is offered: the owner's conversations, shared chats (groups, other people), or both. */
  readonly scopes: readonly ("owner" | "shared")[];
}

/** Distinct scopes whose specs are kept (the owner's, and each shared chat's). */
const KEPT_SCOPES = 128;

/** The session the listing and the specs ask for tools with (specs depend on the scope only). */
const LISTING_SESSION = "api:default:api:tool-listing";

/** A shared chat as the listing asks for it (any one stands for all: sources decide by kind). */
const ANY_SHARED: MemoryScope = { kind: "shared", id: "any", folder: "any" };

/**
 * Every tool a turn may use, from every source, behind one question: the toolkit for this scope. A shared chat's
 * toolkit never holds a tool over the owner's private memory, workspace or MCP servers unless the operator
 * offered it there. The tool specs (JSON Schemas) of a scope are built once and rebuilt only when a source's
 * tools changed, so every turn of a scope hands the model the same array.
 */
export class ToolCatalog {
  readonly #sources: readonly ServerToolSource[];
  readonly #options: ToolCatalogOptions;
  readonly #specs = new Map<string, readonly ToolSpec[]>();
  #specsRevision: number | undefined;

  constructor(sources: readonly ServerToolSource[], options: ToolCatalogOptions = {}) {
    this.#sources = sources;
    this.#options = options;
  }

  /** A turn's toolkit: fresh tools (they may keep per-turn state), the scope's one set of specs. */
  toolkit(scope: MemoryScope, sessionKey: string): Toolkit {
    const bySource = this.#sources.map((source) => ({ source, tools: source.tools(scope, sessionKey) }));
    const sourceOf = new Map<string, string>();
    for (const { source, tools } of bySource) for (const tool of tools) sourceOf.set(tool.name, source.name);
    const made = createToolkit(bySource.flatMap(({ tools }) => tools));
    const specs = this.#specsOf(scope, made);
    const onCall = this.#options.onCall;
    return {
      specs: () => specs,
      has: (name) => made.has(name),
      requiresApproval: (name) => made.requiresApproval(name),
      execute: async (call, context) => {
        const started = performance.now();
        const result = await made.execute(call, context);
        const source = sourceOf.get(call.name);
        if (source !== undefined)
          onCall?.({
            tool: call.name,
            source,
            outcome: result.isError === true ? "error" : "ok",
            seconds: (performance.now() - started) / 1000,
          });
        return result;
      },
    };
  }

  /** The specs a turn in `scope` hands the model (what its fixed prompt budget counts). */
  specs(scope: MemoryScope): readonly ToolSpec[] {
    return this.#specsOf(scope);
  }

  /** Every tool of every source, with where it is offered. */
  listing(): ToolListing[] {
    const listed = new Map<string, { listing: ToolListing; scopes: Set<"owner" | "shared"> }>();
    for (const scope of [{ kind: "owner" } as const, ANY_SHARED]) {
      for (const source of this.#sources) {
        for (const tool of source.tools(scope, LISTING_SESSION)) {
          const known = listed.get(tool.name) ?? {
            listing: {
              name: tool.name,
              source: source.name,
              description: tool.description,
              requiresApproval: tool.requiresApproval === true,
              scopes: [],
            },
            scopes: new Set<"owner" | "shared">(),
          };
          known.scopes.add(scope.kind);
          listed.set(tool.name, known);
        }
      }
    }
    return [...listed.values()].map(({ listing, scopes }) => ({ ...listing, scopes: [...scopes] }));
  }

  #specsOf(scope: MemoryScope, made?: Toolkit): readonly ToolSpec[] {
    const revision = this.#options.revision?.() ?? 0;
    if (revision !== this.#specsRevision) {
      this.#specs.clear();
      this.#specsRevision = revision;
    }
    const key = scope.kind === "owner" ? "owner" : `shared:${scope.id}`;
    let specs = this.#specs.get(key);
    if (specs === undefined) {
      specs = (
        made ?? createToolkit(this.#sources.flatMap((source) => source.tools(scope, LISTING_SESSION)))
      ).specs();
      if (this.#specs.size >= KEPT_SCOPES) {
        const oldest = this.#specs.keys().next();
        if (oldest.done !== true) this.#specs.delete(oldest.value);
      }
      this.#specs.set(key, specs);
    }
    return specs;
  }
}
