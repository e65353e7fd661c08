// Copy buttons on the code blocks of rendered Markdown. The rendered HTML is sanitized without buttons (a
// reply must never place controls in the page), so the buttons are added to the DOM afterwards, and one click
// listener on the container serves them all (no inline handlers: the console runs under a strict CSP).

const FEEDBACK_MS = 1_500;

/**
 * Puts `text` on the clipboard: the Clipboard API where the page may use it (a secure context: HTTPS or
 * localhost), else a selected off-screen textarea and `execCommand("copy")`, which plain HTTP on a LAN
 * address still allows. Resolves false when neither worked.
 */
export async function copyText(text: string): Promise<boolean> {
  if (window.isSecureContext && navigator.clipboard) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch {
      // Refused (no permission, page not focused): try the older way.
    }
  }
  const buffer = document.createElement("textarea");
  buffer.value = text;
  buffer.readOnly = true;
  buffer.className = "copy-buffer";
  document.body.append(buffer);
  buffer.select();
  try {
    return document.execCommand("copy");
  } catch {
    return false;
  } finally {
    buffer.remove();
  }
}

/** Wraps every `<pre>` of `container` that has no copy button yet, with one. */
export function addCopyButtons(container: HTMLElement): void {
  for (const pre of Array.from(container.querySelectorAll("pre"))) {
    if (pre.parentElement?.classList.contains("code-block")) continue;
    const block = document.createElement("div");
    block.className = "code-block";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code";
    button.setAttribute("aria-label", "Copy code");
    button.textContent = "Copy";
    pre.replaceWith(block);
    block.append(pre, button);
  }
}

/** The click listener for a container with copy buttons: copies the block's code and says so on the button. */
export function onCopyClick(event: MouseEvent): void {
  const target = event.target instanceof Element ? event.target : null;
  const button = target?.closest<HTMLButtonElement>("button.copy-code");
  const code = button?.parentElement?.querySelector("pre");
  if (!button || !code) return;
  event.preventDefault();
  const text = (code.querySelector("code") ?? code).textContent ?? "";
  void copyText(text).then((copied) => {
    button.textContent = copied ? "Copied" : "Copy failed";
    button.dataset.state = copied ? "copied" : "failed";
    setTimeout(() => {
      button.textContent = "Copy";
      delete button.dataset.state;
    }, FEEDBACK_MS);
  });
}
