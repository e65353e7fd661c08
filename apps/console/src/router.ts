import { html } from "htm/preact";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

const NAVIGATE_EVENT = "almanac:navigate";

/** Goes to a console path without reloading (the server answers every console path with the app). */
export function navigate(path: string): void {
  if (path === `${location.pathname}${location.search}`) return;
  history.pushState(null, "", path);
  window.dispatchEvent(new Event(NAVIGATE_EVENT));
}

/** The current location (path and query), updated on navigation and on back/forward. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [href, setHref] = useState(() => location.href);
  useEffect(() => {
    const update = () => setHref(location.href);
    window.addEventListener("popstate", update);
    window.addEventListener(NAVIGATE_EVENT, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(NAVIGATE_EVENT, update);
    };
  }, []);
  const url = new URL(href);
  return { path: url.pathname, query: url.searchParams };
}

/** An in-app link: a real `<a href>` (so it can open in a new tab) that navigates without a reload. */
export function Link(props: { href: string; class?: string; children?: ComponentChildren }) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
  };
  return html`<a href=${props.href} class=${props.class} onClick=${onClick}>${props.children}</a>`;
}
