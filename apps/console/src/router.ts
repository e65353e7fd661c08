import { html } from "htm/preact";
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";

const NAVIGATE_EVENT = "almanac:navigate";

/**
 * Goes to a console path without reloading (the server answers every console path with the app). `replace`
 * changes the current history entry instead of adding one (a path filled in, not a place visited).
 */
export function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (path === `${location.pathname}${location.search}`) return;
  if (options.replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
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

/**
 * An in-app link: a real `<a href>` (so it can open in a new tab) that navigates without a reload. `current`
 * marks the link to the page on screen (`aria-current`); `onNavigate` runs when it navigates in the app.
 */
export function Link(props: {
  href: string;
  class?: string;
  current?: boolean;
  onNavigate?: () => void;
  children?: ComponentChildren;
}) {
  const onClick = (event: MouseEvent) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(props.href);
    props.onNavigate?.();
  };
  return html`<a
    href=${props.href}
    class=${props.class}
    aria-current=${props.current ? "page" : undefined}
    onClick=${onClick}
    >${props.children}</a
  >`;
}
