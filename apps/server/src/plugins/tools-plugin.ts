import { join } from "node:path";
import { cutToolOutput } from "@almanac/agent";
import { ApprovalCenter } from "@almanac/approvals";
import { toolOutputTokenBudget } from "@almanac/compaction";
import { McpToolSource } from "@almanac/mcp";
import fp from "fastify-plugin";
import { attachmentMaxBytes } from "../config/attachment-max-bytes.js";
import { compactionWindow } from "../config/compaction-window.js";
import { ApprovalDesk } from "../tools/approval-desk.js";
import { memoryToolSource, webToolSource, workspaceToolSource } from "../tools/built-in-sources.js";
import { sendFileToolSource } from "../tools/send-file-tool.js";
import { type ServerToolSource, ToolCatalog } from "../tools/tool-catalog.js";
import { aTurnAfterReady } from "./after-ready.js";
import { PLUGIN } from "./plugin-names.js";

/** The tools of this server: where they come from, and the owner's approvals of the risky ones. */
export interface ServerTools {
  readonly catalog: ToolCatalog;
  /** The MCP servers (absent when none is configured). */
  readonly mcp: McpToolSource | undefined;
  readonly approvals: ApprovalCenter;
  readonly desk: ApprovalDesk;
}

declare module "fastify" {
  interface FastifyInstance {
    tools: ServerTools;
  }
}

/**
 * Every tool source (memory, workspace files, web_fetch, the tasks, send_file, the MCP servers) behind one catalog, and the approval
 * center calls of risky tools wait at. MCP servers are started once the server listens (a slow server never
 * delays the first answer; its tools appear when it is ready) and stopped after the sessions closed. Approvals
 * left pending by the previous run are closed at start.
 */
export const toolsPlugin = fp(
  async (app) => {
    const { config, memory, metrics, events } = app;
    const approvals = new ApprovalCenter({
      file: join(config.home, "state", "approvals.json"),
      timeoutMs: config.tools.approvalTimeoutMs,
      logger: app.log,
      onChange: (approval) => events.publish({ type: "approval-changed", approval }),
    });
    await approvals.open();
    const outputChars = toolOutputTokenBudget(compactionWindow(config)) * 3;
    const mcp =
      Object.keys(config.mcpServers).length === 0
        ? undefined
        : new McpToolSource({
            servers: config.mcpServers,
            logger: app.log,
            clientVersion: app.almanacVersion,
            limitOutput: (text) => cutToolOutput(text, outputChars),
          });
    const sources: ServerToolSource[] = [
      memoryToolSource(memory),
      workspaceToolSource(memory, join(config.home, "workspace")),
      ...(config.tools.webFetch
        ? [
            webToolSource({
              sharedChats: config.tools.webFetchSharedChats,
              allow: config.tools.webFetchAllow,
              maxChars: outputChars,
              userAgent: `Almanac/${app.almanacVersion} (+web_fetch)`,
            }),
          ]
        : []),
      app.taskTools,
      sendFileToolSource({
        workspace: join(config.home, "workspace"),
        maxBytes: attachmentMaxBytes(config),
        // The hub is built after the tools (its sessions need them); a turn runs only once both are there.
        sendToChat: (file) => app.channels.sendFile(file),
        onSent: (sent) => events.publish({ type: "file-sent", ...sent }),
      }),
      ...(mcp === undefined ? [] : [mcp]),
    ];
    const catalog = new ToolCatalog(sources, {
      revision: () => mcp?.revision ?? 0,
      onCall: (call) => {
        metrics.toolCalls.inc({ tool: call.tool, source: call.source, outcome: call.outcome });
        metrics.toolDuration.observe({ source: call.source }, call.seconds);
      },
    });
    app.decorate("tools", { catalog, mcp, approvals, desk: new ApprovalDesk(approvals, config) });
    if (mcp !== undefined) {
      void aTurnAfterReady(app).then(() =>
        mcp.start().catch((error: unknown) => app.log.error({ err: error }, "MCP servers failed to start")),
      );
    }
    // Turns waiting for an answer go on at once with a refusal, so the shutdown's drain does not wait on people.
    app.addHook("preClose", async () => {
      await approvals.close();
    });
    app.addHook("onClose", async () => {
      await mcp?.stop();
      app.log.debug({ plugin: PLUGIN.tools }, "plugin closed");
    });
  },
  {
    name: PLUGIN.tools,
    fastify: "5.x",
    dependencies: [PLUGIN.config, PLUGIN.telemetry, PLUGIN.memory, PLUGIN.tasks],
  },
);
