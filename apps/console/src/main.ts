import "./styles.css";
import "./pages.css";
import { html, render } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, clearToken, getToken, onUnauthorized } from "./api.js";
import { ApprovalDialog, usePendingApprovals } from "./components/approval-dialog.js";
import { ChartsPage } from "./pages/charts.js";
import { ChatPage } from "./pages/chat.js";
import { LoginPage } from "./pages/login.js";
import { MemoryPage } from "./pages/memory.js";
import { SessionDetailPage } from "./pages/session-detail.js";
import { SessionsPage } from "./pages/sessions.js";
import { SetupPage } from "./pages/setup.js";
import { SystemPage } from "./pages/system.js";
import { TasksPage } from "./pages/tasks.js";
import { ToolsPage } from "./pages/tools.js";
import { asRecord } from "./read.js";
import { Link, navigate, useLocation } from "./router.js";

const NAV = [
  { href: "/chat", label: "Chat" },
  { href: "/sessions", label: "Sessions" },
  { href: "/memory", label: "Memory" },
  { href: "/tools", label: "Tools" },
  { href: "/tasks", label: "Tasks" },
  { href: "/charts", label: "Charts" },
  { href: "/system", label: "System" },
] as const;

function Page(props: { path: string; query: URLSearchParams }) {
  const { path, query } = props;
  if (path.startsWith("/sessions/")) {
    const key = decodeURIComponent(path.slice("/sessions/".length));
    return html`<${SessionDetailPage} key=${key} sessionKey=${key} />`;
  }
  if (path === "/sessions") return html`<${SessionsPage} />`;
  if (path === "/memory") return html`<${MemoryPage} file=${query.get("file") ?? undefined} />`;
  if (path === "/system") return html`<${SystemPage} />`;
  if (path === "/tools") return html`<${ToolsPage} />`;
  if (path === "/tasks") return html`<${TasksPage} />`;
  if (path === "/charts") return html`<${ChartsPage} />`;
  if (path === "/setup") return html`<${SetupPage} />`;
  return html`<${ChatPage} conversation=${query.get("conversation") || undefined} />`;
}

/** The count of approvals waiting, beside the Tools link (read out as words, shown as a number). */
function WaitingCount(props: { count: number }) {
  if (props.count === 0) return null;
  const words = `${props.count} approval${props.count === 1 ? "" : "s"} waiting`;
  return html`<span class="nav-count" aria-hidden="true" title=${words}>${props.count}</span
    ><span class="visually-hidden"> (${words})</span>`;
}

/**
 * The top bar: the pages, and Log out. On a phone the pages fold behind a Menu button (a row of links does
 * not fit 390 px); choosing one, or Escape, folds them again.
 */
function TopBar(props: { active: string; needsSetup: boolean; waiting: number; onLogout: () => void }) {
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (!open) return;
    const onKey = (event: KeyboardEvent) => event.key === "Escape" && setOpen(false);
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [open]);
  const items = props.needsSetup ? [{ href: "/setup", label: "Setup" }, ...NAV] : NAV;
  return html`
    <header class="top">
      <span class="brand">Almanac</span>
      <button
        type="button"
        class="secondary menu-toggle"
        aria-label="Menu"
        aria-expanded=${open}
        aria-controls="pages"
        onClick=${() => setOpen(!open)}
      >
        <span aria-hidden="true">☰</span>
      </button>
      <nav id="pages" class=${open ? "open" : ""} aria-label="Pages">
        ${items.map(
          (item) =>
            html`<${Link}
              href=${item.href}
              class=${item.href === props.active ? "active" : ""}
              current=${item.href === props.active}
              onNavigate=${() => setOpen(false)}
              >${item.label}${item.href === "/tools" ? html`<${WaitingCount} count=${props.waiting} />` : null}<//
            >`,
        )}
      </nav>
      <button class="link logout" onClick=${props.onLogout}>Log out</button>
    </header>
  `;
}

/** The pages once logged in: the top bar, the page, and the approval dialog over whichever page is open. */
function Console(props: { path: string; query: URLSearchParams; needsSetup: boolean; onLogout: () => void }) {
  const pending = usePendingApprovals();
  const active = props.path === "/" ? "/chat" : `/${props.path.split("/")[1] ?? ""}`;
  return html`
    <${TopBar} active=${active} needsSetup=${props.needsSetup} waiting=${pending.length} onLogout=${props.onLogout} />
    <main class=${active === "/chat" ? "wide" : ""}><${Page} path=${props.path} query=${props.query} /></main>
    <${ApprovalDialog} pending=${pending} />
  `;
}

function App() {
  const [authed, setAuthed] = useState(() => getToken() !== null);
  const { path, query } = useLocation();
  useEffect(() => onUnauthorized(() => setAuthed(false)), []);
  // First run: with no model configured the console opens on the setup page (and keeps a link to it).
  const [needsSetup, setNeedsSetup] = useState(false);
  useEffect(() => {
    if (!authed) return;
    api("/api/info").then(
      (info) => {
        const configured = asRecord(asRecord(info).model).configured !== false;
        setNeedsSetup(!configured);
        if (!configured && (location.pathname === "/" || location.pathname === "/chat")) navigate("/setup");
      },
      () => {},
    );
  }, [authed]);
  if (!authed) return html`<${LoginPage} onLogin=${() => setAuthed(true)} />`;
  const logout = () => {
    clearToken();
    setAuthed(false);
  };
  return html`<${Console} path=${path} query=${query} needsSetup=${needsSetup} onLogout=${logout} />`;
}

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
