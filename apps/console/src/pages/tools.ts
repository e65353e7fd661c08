import { html } from "htm/preact";
import { useEffect } from "preact/hooks";
import { api } from "../api.js";
import { type Approval, prettyArguments, readApprovals, whereOffered } from "../approvals.js";
import { ApprovalDetails, DecisionButtons, OutcomeLine, useDecision } from "../components/approval-card.js";
import { formatValue } from "../components/facts.js";
import { useDebounced, useLiveEvents } from "../live.js";
import { asArray, asRecord, formatAgo, formatTime, num, str } from "../read.js";
import { Link } from "../router.js";
import { ErrorBox, useLoad, useNow } from "../ui.js";
import { LiveBadge } from "./sessions.js";

interface ToolRow {
  readonly name: string;
  readonly source: string;
  readonly description: string;
  readonly requiresApproval: boolean;
  readonly scopes: readonly string[];
}

interface McpServerRow {
  readonly name: string;
  readonly transport: string;
  readonly state: string;
  readonly tools: number;
  readonly lastError: string;
  readonly restarts: number;
  readonly since: number | undefined;
}

interface ToolsListing {
  readonly tools: readonly ToolRow[];
  readonly mcpServers: readonly McpServerRow[];
  readonly approvalTimeoutMs: number | undefined;
}

async function loadTools(): Promise<ToolsListing> {
  const body = asRecord(await api("/api/tools"));
  return {
    tools: asArray(body.tools)
      .map(asRecord)
      .map((tool) => ({
        name: str(tool.name),
        source: str(tool.source),
        description: str(tool.description),
        requiresApproval: tool.requiresApproval === true,
        scopes: asArray(tool.scopes).map((scope) => str(scope)),
      })),
    mcpServers: asArray(body.mcpServers)
      .map(asRecord)
      .map((server) => ({
        name: str(server.name),
        transport: str(server.transport),
        state: str(server.state, "unknown"),
        tools: num(server.tools) ?? 0,
        lastError: str(server.lastError),
        restarts: num(server.restarts) ?? 0,
        since: num(server.since),
      })),
    approvalTimeoutMs: num(body.approvalTimeoutMs),
  };
}

async function loadApprovals(): Promise<{ pending: Approval[]; recent: Approval[] }> {
  const body = asRecord(await api("/api/approvals?limit=50"));
  return { pending: readApprovals(body.pending), recent: readApprovals(body.approvals) };
}

/** The sources in the order the page shows them, each with its heading; others follow under their own name. */
const SOURCES: ReadonlyArray<readonly [string, string]> = [
  ["memory", "Memory"],
  ["workspace", "Workspace files"],
  ["web", "Web"],
  ["mcp", "MCP servers"],
];

/** The tools grouped by source, in {@link SOURCES} order, each group sorted by name. */
function groupBySource(
  tools: readonly ToolRow[],
): Array<{ source: string; label: string; tools: ToolRow[] }> {
  const known = SOURCES.map(([source]) => source);
  const others = [...new Set(tools.map((tool) => tool.source))].filter((source) => !known.includes(source));
  return [...SOURCES, ...others.map((source) => [source, source] as const)]
    .map(([source, label]) => ({
      source,
      label,
      tools: tools.filter((tool) => tool.source === source).sort((a, b) => a.name.localeCompare(b.name)),
    }))
    .filter((group) => group.tools.length > 0);
}

/** An MCP server's state as a badge: green when ready, amber while connecting, red when down. */
function ServerState(props: { state: string }) {
  return html`<span class=${`state ${props.state}`}>${props.state}</span>`;
}

function McpServers(props: { servers: readonly McpServerRow[] }) {
  if (props.servers.length === 0)
    return html`<p class="muted">
      No MCP servers configured (<code>ALMANAC_MCP_SERVERS</code> or <code>ALMANAC_MCP_CONFIG</code>).
    </p>`;
  return html`<div class="table-wrap">
    <table class="mcp-servers">
      <thead>
        <tr><th>Server</th><th>Transport</th><th>State</th><th class="num">Tools</th><th>Last error</th></tr>
      </thead>
      <tbody>
        ${props.servers.map(
          (server) => html`<tr data-server=${server.name}>
            <td class="key" data-label="Server">${server.name}</td>
            <td data-label="Transport">${server.transport}</td>
            <td data-label="State">
              <${ServerState} state=${server.state} />
              ${server.since === undefined ? null : html` <span class="muted small" title=${formatTime(server.since)}>${formatAgo(server.since)}</span>`}
              ${server.restarts > 0 ? html` <span class="muted small">restarted ${server.restarts}×</span>` : null}
            </td>
            <td class="num" data-label="Tools">${server.tools}</td>
            <td data-label="Last error" class="server-error">${server.lastError || html`<span class="muted">none</span>`}</td>
          </tr>`,
        )}
      </tbody>
    </table>
  </div>`;
}

function ToolGroups(props: { tools: readonly ToolRow[] }) {
  const groups = groupBySource(props.tools);
  if (groups.length === 0) return html`<p class="muted">No tools.</p>`;
  return groups.map(
    (group) => html`<section class="tool-group" data-source=${group.source} aria-label=${group.label}>
      <h3>${group.label} <span class="muted small">${group.tools.length}</span></h3>
      <ul class="tool-list">
        ${group.tools.map(
          (tool) => html`<li data-tool=${tool.name}>
            <div class="tool-head">
              <code class="tool-name">${tool.name}</code>
              ${tool.requiresApproval ? html`<span class="badge mark needs-approval">needs approval</span>` : null}
              <span class="badge offered" title="Where the assistant is offered this tool">${whereOffered(tool.scopes)}</span>
            </div>
            ${tool.description ? html`<p class="tool-description">${tool.description}</p>` : null}
          </li>`,
        )}
      </ul>
    </section>`,
  );
}

/** The waiting approvals, each with its details and Approve / Deny; the outcome of the last answer above them. */
function PendingApprovals(props: {
  pending: readonly Approval[];
  timeoutMs: number | undefined;
  onAnswered: () => void;
}) {
  const now = useNow();
  const decision = useDecision();
  const decide = async (approval: Approval, answer: "approve" | "deny") => {
    await decision.decide(approval, answer);
    props.onAnswered();
  };
  return html`<div class="card pending-approvals">
    <h2>Pending approvals</h2>
    ${
      props.timeoutMs === undefined
        ? null
        : html`<p class="muted small">
            A call that needs approval waits ${formatValue("approvalTimeoutMs", props.timeoutMs)} for an answer, then
            counts as denied.
          </p>`
    }
    <${OutcomeLine} outcome=${decision.last?.outcome} />
    ${
      props.pending.length === 0
        ? html`<p class="muted">Nothing waits for you.</p>`
        : html`<ul class="approval-list">
            ${props.pending.map(
              (
                approval,
              ) => html`<li class="approval" data-approval=${approval.id} aria-label=${`Approval ${approval.id}`}>
                <h3>${approval.id}</h3>
                <${ApprovalDetails} approval=${approval} now=${now} />
                <div class="actions">
                  <${DecisionButtons}
                    busy=${decision.busy === approval.id}
                    onDecide=${(answer: "approve" | "deny") => decide(approval, answer)}
                  />
                </div>
              </li>`,
            )}
          </ul>`
    }
  </div>`;
}

/** The approvals settled lately, newest first, each with its arguments folded below. */
function RecentApprovals(props: { approvals: readonly Approval[] }) {
  const settled = props.approvals.filter((approval) => approval.state !== "pending");
  return html`<div class="card">
    <h2>Recent approvals</h2>
    ${
      settled.length === 0
        ? html`<p class="muted">None yet.</p>`
        : html`<div class="table-wrap">
            <table class="approvals">
              <thead>
                <tr><th>Asked</th><th>Tool</th><th>Session</th><th>Outcome</th><th>Arguments</th></tr>
              </thead>
              <tbody>
                ${settled.map(
                  (approval) => html`<tr data-approval=${approval.id}>
                    <td data-label="Asked" title=${formatTime(approval.requestedAt)}>
                      ${formatAgo(approval.requestedAt)} <span class="muted small">${approval.id}</span>
                    </td>
                    <td class="key" data-label="Tool">${approval.tool}</td>
                    <td class="key" data-label="Session">
                      <${Link} href=${`/sessions/${encodeURIComponent(approval.sessionKey)}`}>${approval.sessionKey}<//>
                    </td>
                    <td data-label="Outcome">
                      <span class=${`state ${approval.state}`}>${approval.state}</span>
                      ${approval.decidedBy ? html` <span class="muted small">by ${approval.decidedBy}</span>` : null}
                      ${approval.reason ? html`<div class="muted small">${approval.reason}</div>` : null}
                    </td>
                    <td data-label="Arguments">
                      <details>
                        <summary>Show</summary>
                        <pre class="approval-arguments">${prettyArguments(approval.arguments)}</pre>
                      </details>
                    </td>
                  </tr>`,
                )}
              </tbody>
            </table>
          </div>`
    }
  </div>`;
}

/** MCP servers still starting or down are asked again this often (their changes are not pushed as events). */
const MCP_POLL_MS = 3000;

/**
 * The tools the assistant can use: the approvals waiting for the owner (answered here), the MCP servers and their
 * states, every tool by source with where it is offered and whether it needs approval, and recent approvals.
 */
export function ToolsPage() {
  const tools = useLoad(loadTools, "tools");
  const approvals = useLoad(loadApprovals, "approvals");
  const reloadApprovals = useDebounced(approvals.reload, 150);
  const live = useLiveEvents((event) => {
    if (event.type === "approval-changed") reloadApprovals();
    if (event.type === "snapshot") {
      reloadApprovals();
      tools.reload();
    }
  });
  const unsettled = (tools.data?.mcpServers ?? []).some(
    (server) => server.state === "connecting" || server.state === "down",
  );
  useEffect(() => {
    if (!unsettled || tools.loading) return;
    const timer = setTimeout(tools.reload, MCP_POLL_MS);
    return () => clearTimeout(timer);
  }, [unsettled, tools.loading, tools.data]);
  return html`
    <section class="tools-page">
      <div class="title-row">
        <h1>Tools <${LiveBadge} state=${live} /></h1>
        <button class="secondary" onClick=${() => {
          tools.reload();
          approvals.reload();
        }}>Refresh</button>
      </div>
      <${ErrorBox} error=${approvals.error} />
      <${PendingApprovals}
        pending=${approvals.data?.pending ?? []}
        timeoutMs=${tools.data?.approvalTimeoutMs}
        onAnswered=${approvals.reload}
      />
      <${ErrorBox} error=${tools.error} />
      <div class="card">
        <h2>MCP servers</h2>
        ${tools.data ? html`<${McpServers} servers=${tools.data.mcpServers} />` : null}
      </div>
      <div class="card">
        <h2>Tools</h2>
        <p class="muted small">
          <strong>owner only</strong>: offered in your own conversations; <strong>owner and shared chats</strong>:
          also in groups and chats with other people.
        </p>
        ${tools.data ? html`<${ToolGroups} tools=${tools.data.tools} />` : null}
      </div>
      <${RecentApprovals} approvals=${approvals.data?.recent ?? []} />
    </section>
  `;
}
