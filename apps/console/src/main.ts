import "./styles.css";
import "./pages.css";
import { html, render } from "htm/preact";
import { useEffect, useState } from "preact/hooks";
import { clearToken, getToken, onUnauthorized } from "./api.js";
import { ChatPage } from "./pages/chat.js";
import { LoginPage } from "./pages/login.js";
import { MemoryPage } from "./pages/memory.js";
import { SessionDetailPage } from "./pages/session-detail.js";
import { SessionsPage } from "./pages/sessions.js";
import { SystemPage } from "./pages/system.js";
import { Link, useLocation } from "./router.js";

const NAV = [
  { href: "/chat", label: "Chat" },
  { href: "/sessions", label: "Sessions" },
  { href: "/memory", label: "Memory" },
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
  return html`<${ChatPage} />`;
}

function App() {
  const [authed, setAuthed] = useState(() => getToken() !== null);
  const { path, query } = useLocation();
  useEffect(() => onUnauthorized(() => setAuthed(false)), []);
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
        ${NAV.map(
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
