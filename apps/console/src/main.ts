import "./styles.css";
import "./pages.css";
import { html, render } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { api, clearToken, getToken, onUnauthorized } from "./api.js";
import { ChartsPage } from "./pages/charts.js";
import { ChatPage } from "./pages/chat.js";
import { LoginPage } from "./pages/login.js";
import { MemoryPage } from "./pages/memory.js";
import { SessionDetailPage } from "./pages/session-detail.js";
import { SessionsPage } from "./pages/sessions.js";
import { SetupPage } from "./pages/setup.js";
import { SystemPage } from "./pages/system.js";
import { asRecord } from "./read.js";
import { Link, navigate, useLocation } from "./router.js";

const NAV = [
  { href: "/chat", label: "Chat" },
  { href: "/sessions", label: "Sessions" },
  { href: "/memory", label: "Memory" },
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
  if (path === "/charts") return html`<${ChartsPage} />`;
  if (path === "/setup") return html`<${SetupPage} />`;
  return html`<${ChatPage} />`;
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
  const active = path === "/" ? "/chat" : `/${path.split("/")[1] ?? ""}`;
  const logout = () => {
    clearToken();
    setAuthed(false);
  };
  return html`
    <header class="top">
      <span class="brand">Almanac</span>
      <nav aria-label="Pages">
        ${(needsSetup ? [{ href: "/setup", label: "Setup" }, ...NAV] : NAV).map(
          (item) =>
            html`<${Link} href=${item.href} class=${item.href === active ? "active" : ""}>${item.label}<//>`,
        )}
      </nav>
      <button class="link logout" onClick=${logout}>Log out</button>
    </header>
    <main><${Page} path=${path} query=${query} /></main>
  `;
}

const root = document.getElementById("app");
if (root) render(html`<${App} />`, root);
