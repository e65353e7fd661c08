/** One segment of a concrete path: a static part of the route's pattern, or a filled-in parameter. */
export interface PathSegment {
  readonly text: string;
  readonly isStatic: boolean;
}

/** Values for a route's parameters (`:key`, `:id`, the `*` wildcard), already URL-encoded. */
export interface RouteParams {
  readonly [name: string]: string;
}

/** A route's pattern with its parameters filled in, as segments. */
export function fillRoute(url: string, params: RouteParams): PathSegment[] {
  return url
    .split("/")
    .slice(1)
    .map((segment) => {
      if (segment === "*") return { text: params["*"] ?? "x", isStatic: false };
      if (segment.startsWith(":")) return { text: params[segment.slice(1)] ?? "x", isStatic: false };
      return { text: segment, isStatic: true };
    });
}

/** Joins segments back into a path. */
export function joinPath(segments: readonly PathSegment[]): string {
  return `/${segments.map((segment) => segment.text).join("/")}`;
}

/** `%61` and `%6D`/`%6d`: the percent-encodings of one character (upper and lower hex where they differ). */
export function percentEncodings(character: string): string[] {
  const upper = [...Buffer.from(character, "utf8")]
    .map((byte) => `%${byte.toString(16).toUpperCase().padStart(2, "0")}`)
    .join("");
  const lower = upper.toLowerCase();
  return upper === lower ? [upper] : [upper, lower];
}

/**
 * Spellings of one concrete path a router or a prefix check might treat differently: every character of every
 * static segment percent-encoded (upper and lower hex), double slashes, `/./`, `/x/../`, a trailing slash,
 * `;param`, upper case, and an encoded slash.
 */
export function pathSpellings(segments: readonly PathSegment[]): string[] {
  const spellings = new Set<string>([joinPath(segments)]);
  const replaceSegment = (index: number, text: string) =>
    joinPath(segments.map((segment, at) => (at === index ? { ...segment, text } : segment)));
  segments.forEach((segment, index) => {
    if (!segment.isStatic) return;
    [...segment.text].forEach((character, position) => {
      for (const encoded of percentEncodings(character)) {
        spellings.add(
          replaceSegment(
            index,
            `${segment.text.slice(0, position)}${encoded}${segment.text.slice(position + 1)}`,
          ),
        );
      }
    });
    spellings.add(replaceSegment(index, segment.text.toUpperCase()));
    spellings.add(replaceSegment(index, `${segment.text};x=1`));
  });
  const path = joinPath(segments);
  for (let index = 0; index <= segments.length; index += 1) {
    const before = `/${segments
      .slice(0, index)
      .map((segment) => segment.text)
      .join("/")}`.replace(/\/$/, "");
    const after = segments
      .slice(index)
      .map((segment) => segment.text)
      .join("/");
    spellings.add(`${before}//${after}`);
    spellings.add(`${before}/./${after}`);
    spellings.add(`${before}/x/../${after}`);
    spellings.add(`${before}/%2e/${after}`);
    spellings.add(`${before}/x/%2e%2e/${after}`);
  }
  spellings.add(`${path}/`);
  spellings.add(`${path};x=1`);
  spellings.add(path.toUpperCase());
  spellings.add(`/${path}`);
  spellings.add(path.replaceAll("/", "%2F"));
  spellings.add(path.replace(/^\//, "\\"));
  return [...spellings];
}
