import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { api } from "../api.js";
import { asArray, asRecord, str } from "../read.js";
import { ErrorBox, useLoad } from "../ui.js";

/** The colour of a check's status (the classes the System page uses for states). */
const STATE_CLASS: Record<string, string> = { ok: "ready", warn: "pending", fail: "error" };

/** Text with `backticked` parts shown as code. */
function withCode(text: string) {
  return text.split("`").map((part, index) => (index % 2 === 1 ? html`<code>${part}</code>` : part));
}

/** Example settings as `.env` lines. */
function envText(env: Record<string, unknown>): string {
  return Object.entries(env)
    .map(([name, value]) => `${name}=${str(value)}`)
    .join("\n");
}

/**
 * First run: the doctor's checks as the server sees them, what is missing, and example settings for the
 * usual model servers. The console opens here while no model is configured.
 */
export function SetupPage() {
  const setup = useLoad(async () => asRecord(await api("/api/setup")), "setup");
  const [chosen, setChosen] = useState(0);
  const data = setup.data;
  const checks = asArray(data?.checks).map(asRecord);
  const missing = asArray(data?.missing).map((name) => str(name));
  const examples = asArray(data?.examples).map(asRecord);
  const example = examples[chosen];
  return html`
    <section class="setup">
      <div class="title-row">
        <h1>Set up Almanac</h1>
        <button class="secondary" onClick=${setup.reload} disabled=${setup.loading}>Check again</button>
      </div>
      <${ErrorBox} error=${setup.error} />
      ${
        data
          ? html`
            ${
              data.modelConfigured === true
                ? html`<p class="ok">A model is configured: chat works. The checks below are what <code>almanac doctor</code> reports.</p>`
                : html`<div class="card attention">
                    <h2>No model is configured yet</h2>
                    <p>Chat answers <code>503 model.not_configured</code> until these are set:
                      ${missing.map((name) => html` <code class="missing">${name}</code>`)}.</p>
                    <p>
                      Set them in the environment, in <code>.env</code> next to where you start the server, or in${" "}
                      <code>almanac.yaml</code>, then restart the server and press <em>Check again</em>.
                    </p>
                  </div>`
            }
            <div class="card">
              <h2>Checks</h2>
              <ul class="checks">
                ${checks.map(
                  (entry) => html`<li class=${`check check-${str(entry.status)}`}>
                    <span class=${`state ${STATE_CLASS[str(entry.status)] ?? "disabled"}`}>${str(entry.status)}</span>
                    <strong>${str(entry.name)}</strong>
                    <span>${str(entry.message)}</span>
                    ${entry.hint ? html`<div class="muted small hint">→ ${str(entry.hint)}</div>` : null}
                  </li>`,
                )}
              </ul>
            </div>
            <div class="card">
              <h2>Example settings</h2>
              <div class="tabs" role="tablist" aria-label="Model server">
                ${examples.map(
                  (entry, index) => html`<button role="tab" aria-selected=${index === chosen}
                    class=${index === chosen ? "" : "secondary"} onClick=${() => setChosen(index)}>${str(entry.label)}</button>`,
                )}
              </div>
              ${
                example
                  ? html`<div role="tabpanel" aria-label=${str(example.label)}>
                      <p>${withCode(str(example.note))}</p>
                      <pre class="env-example">${envText(asRecord(example.env))}</pre>
                      <p class="muted small">
                        Values in angle brackets are yours to fill in. Every setting is in the README's configuration${" "}
                        table and in <code>.env.example</code>.
                      </p>
                    </div>`
                  : null
              }
            </div>
          `
          : setup.loading
            ? html`<p class="muted">Running the checks…</p>`
            : null
      }
    </section>
  `;
}
