import { UserError } from "@almanac/core";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ServerTools } from "../plugins/tools-plugin.js";

const idParams = z.object({ id: z.string().min(1).max(16) });
const decisionBody = z.object({
  decision: z.enum(["approve", "deny"]),
  /** Where the owner answered, for the record (the console says so); the admin token is what authorizes it. */
  via: z.enum(["api", "console"]).default("api"),
});
const listQuery = z.object({
  state: z.enum(["pending", "approved", "denied", "expired", "closed"]).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/**
 * `GET /api/tools` (every tool, where it comes from and where it is offered, with the MCP servers' states),
 * `GET /api/approvals` and `POST /api/approvals/{id}` (the owner answers a waiting call).
 */
export function registerToolRoutes(app: FastifyInstance, tools: ServerTools): void {
  app.get(
    "/api/tools",
    { schema: { tags: ["admin"], summary: "Tools the assistant can use, and the MCP servers' states" } },
    async () => ({
      tools: tools.catalog.listing(),
      mcpServers: tools.mcp?.statuses() ?? [],
      approvalTimeoutMs: tools.approvals.timeoutMs,
    }),
  );

  app.get(
    "/api/approvals",
    { schema: { tags: ["admin"], summary: "Approvals of tool calls: pending first, then recent" } },
    async (request) => {
      const parsed = listQuery.safeParse(request.query);
      if (!parsed.success)
        throw new UserError(
          "request.invalid",
          "state must be pending, approved, denied, expired or closed; limit 1-200.",
        );
      const { state, limit } = parsed.data;
      const recent = tools.approvals
        .recent(200)
        .filter((record) => state === undefined || record.state === state);
      return { pending: tools.approvals.pending(), approvals: recent.slice(0, limit) };
    },
  );

  app.post(
    "/api/approvals/:id",
    { schema: { tags: ["admin"], summary: 'Answer a waiting tool call: {"decision": "approve" | "deny"}' } },
    async (request) => {
      const params = idParams.safeParse(request.params);
      if (!params.success) throw new UserError("request.invalid", "An approval id is required in the path.");
      const { id } = params.data;
      const body = decisionBody.safeParse(request.body);
      if (!body.success)
        throw new UserError("request.invalid", 'Send {"decision": "approve"} or {"decision": "deny"}.');
      const decided = tools.approvals.decide(id, body.data.decision === "approve", body.data.via);
      if (decided !== undefined) return decided;
      const known = tools.approvals.get(id);
      if (known === undefined) throw new UserError("approval.not_found", `No approval ${id}.`);
      throw new UserError(
        "approval.not_pending",
        `Approval ${known.id} is already ${known.state}${known.reason ? ` (${known.reason})` : ""}.`,
      );
    },
  );
}
