import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { ApiError, clearToken, setToken } from "../api.js";
import { describeError } from "../ui.js";

/** Asks for the admin token and checks it against `GET /api/info` before keeping it. */
export function LoginPage(props: { onLogin: () => void }) {
  const [token, setTokenText] = useState("");
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    setToken(token.trim());
    try {
      const response = await fetch("/api/info", { headers: { authorization: `Bearer ${token.trim()}` } });
      if (response.status === 401) throw new ApiError(401, "auth.unauthorized", "That token was refused.");
      if (!response.ok)
        throw new ApiError(response.status, "http.error", `The server answered ${response.status}.`);
      props.onLogin();
    } catch (caught) {
      clearToken();
      setError(describeError(caught));
    } finally {
      setBusy(false);
    }
  };

  return html`
    <main class="login">
      <form class="card" onSubmit=${submit}>
        <h1>Almanac</h1>
        <p class="muted">Enter the admin token (<code>ALMANAC_ADMIN_TOKEN</code>). It stays in this tab only.</p>
        <label for="token">Admin token</label>
        <input
          id="token"
          name="token"
          type="password"
          autocomplete="current-password"
          value=${token}
          onInput=${(event: Event) => setTokenText((event.currentTarget as HTMLInputElement).value)}
          required
        />
        ${error ? html`<p class="error" role="alert">${error}</p>` : null}
        <button type="submit" disabled=${busy || token.trim() === ""}>${busy ? "Checking…" : "Log in"}</button>
      </form>
    </main>
  `;
}
