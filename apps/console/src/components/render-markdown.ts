// Loaded on demand (its own chunk): Markdown parser, sanitizer and highlighter stay out of the first page load.
import DOMPurify from "dompurify";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { Marked, type Tokens } from "marked";

for (const [name, language] of Object.entries({
  bash,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  python,
  rust,
  sql,
  typescript,
  xml,
  yaml,
})) {
  hljs.registerLanguage(name, language);
}
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx", "mjs"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });

function escapeHtml(text: string): string {
  return text
    .replaceAll("&", "&amp;")
    .replaceAll("<", "&lt;")
    .replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;")
    .replaceAll("'", "&#39;");
}

const marked = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    // Raw HTML in a reply is shown as the text it is, never interpreted: the model (or a prompt injection
    // through a tool result) must not be able to place elements in the page.
    html({ text }: Tokens.HTML | Tokens.Tag) {
      return escapeHtml(text);
    },
    // Images become links: an image would load from any URL the moment the reply renders (a way to send
    // conversation data to a third party). Following a link is the user's choice.
    image({ href, text }: Tokens.Image) {
      return `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`;
    },
    code({ text, lang }: Tokens.Code) {
      const language = (lang ?? "").trim().split(/\s+/)[0]?.toLowerCase() ?? "";
      const known = language !== "" && hljs.getLanguage(language) !== undefined;
      const body = known ? hljs.highlight(text, { language, ignoreIllegals: true }).value : escapeHtml(text);
      const label = language === "" ? "" : ` data-lang="${escapeHtml(language)}"`;
      return `<pre${label}><code class="hljs${known ? ` language-${escapeHtml(language)}` : ""}">${body}</code></pre>\n`;
    },
  },
});

const purify = DOMPurify(window);
// Links open outside the console and cannot reach back into it.
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A") {
    node.setAttribute("rel", "noopener noreferrer");
    node.setAttribute("target", "_blank");
  }
});

/**
 * A reply's Markdown as sanitized HTML: GitHub-flavoured Markdown, code highlighted, raw HTML shown as text,
 * images as links, and the result passed through DOMPurify (no scripts, event handlers or `javascript:` URLs).
 */
export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return purify.sanitize(html, {
    FORBID_TAGS: ["style", "img", "svg", "math", "form", "input", "button", "textarea", "select"],
    FORBID_ATTR: ["style"],
    ADD_ATTR: ["target"],
  });
}
