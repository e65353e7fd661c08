// The HTML side of web_fetch: a DOM (linkedom), Readability and Turndown. web-fetch.ts imports this module on the
// first page it converts, so a server whose agent never fetches a page does not carry these libraries (about 35 MB
// of resident memory measured at start-up; BENCHMARKS.md, idle RSS).
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

const turndown = new TurndownService({
  headingStyle: "atx",
  codeBlockStyle: "fenced",
  bulletListMarker: "-",
});
turndown.remove(["script", "style", "noscript", "iframe"]);

/** A page's readable part as Markdown: Readability's article when it finds one, else the whole body. */
export function htmlToMarkdown(html: string): { readonly title: string; readonly markdown: string } {
  const { document } = parseHTML(html);
  const title = document.title?.trim() ?? "";
  try {
    const article = new Readability(document as unknown as Document, { charThreshold: 200 }).parse();
    if (article?.content) {
      return { title: article.title?.trim() || title, markdown: turndown.turndown(article.content).trim() };
    }
  } catch {
    // Readability gives up on some pages: the body as it is.
  }
  const { document: fresh } = parseHTML(html);
  const body = fresh.body?.innerHTML ?? html;
  return { title, markdown: turndown.turndown(body).trim() };
}
