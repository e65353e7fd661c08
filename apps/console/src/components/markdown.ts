import "./components.css";
import { html } from "htm/preact";
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { addCopyButtons, onCopyClick } from "./code-copy.js";

type Render = (text: string) => string;
let renderer: Render | undefined;
let loading: Promise<Render> | undefined;

/** Loads the Markdown renderer once (its own chunk); every caller shares the same promise. */
function loadRenderer(): Promise<Render> {
  loading ??= import("./render-markdown.js").then((module) => {
    renderer = module.renderMarkdown;
    return module.renderMarkdown;
  });
  return loading;
}

/** The Markdown renderer once it is loaded (plain text is shown until then). */
function useRenderer(): Render | undefined {
  const [render, setRender] = useState<Render | undefined>(() => renderer);
  useEffect(() => {
    if (render) return;
    let current = true;
    void loadRenderer().then((loaded) => current && setRender(() => loaded));
    return () => {
      current = false;
    };
  }, [render]);
  return render;
}

/**
 * A message rendered as sanitized Markdown (see `render-markdown.ts`), its code blocks with a Copy button;
 * plain text until the renderer loads.
 */
export function Markdown(props: { text: string; class?: string }) {
  const render = useRenderer();
  const container = useRef<HTMLDivElement>(null);
  // Rendered again only when the text changes (a streaming reply re-renders its siblings on every piece).
  const rendered = useMemo(() => (render ? render(props.text) : undefined), [render, props.text]);
  // Preact replaces the inner HTML only when `rendered` changes: the buttons are added again after each.
  useLayoutEffect(() => {
    if (rendered !== undefined && container.current) addCopyButtons(container.current);
  }, [rendered]);
  const className = `markdown${props.class ? ` ${props.class}` : ""}`;
  if (rendered === undefined) return html`<div class=${`${className} plain`}>${props.text}</div>`;
  return html`<div
    ref=${container}
    class=${className}
    onClick=${onCopyClick}
    dangerouslySetInnerHTML=${{ __html: rendered }}
  ></div>`;
}
