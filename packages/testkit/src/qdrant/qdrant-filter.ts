// Qdrant's filter semantics over stored points (requests were validated against the schema
// first, so shapes are known). Geo and nested conditions are refused loudly rather than guessed.

/** A stored point as the filter sees it. */
export interface FilterablePoint {
  readonly id: string | number;
  readonly payload: Readonly<Record<string, unknown>>;
  readonly vectorNames: ReadonlySet<string>;
}

/** A request the fake does not implement: answered 400 so the test fails instead of passing on a guess. */
export class UnsupportedByFakeError extends Error {
  override readonly name = "UnsupportedByFakeError";
}

type Json = Record<string, unknown>;

const asList = (value: unknown): unknown[] =>
  value === undefined || value === null ? [] : Array.isArray(value) ? value : [value];

/** The values at a payload key: `a.b` walks objects, arrays are flattened (Qdrant's multi-value fields). */
export function valuesAt(payload: Readonly<Record<string, unknown>>, key: string): unknown[] {
  let current: unknown[] = [payload];
  for (const segment of key.replace(/\[\]/gu, "").split(".")) {
    current = current.flatMap((value) =>
      typeof value === "object" && value !== null && !Array.isArray(value)
        ? asList((value as Json)[segment])
        : [],
    );
  }
  return current.flatMap((value) => (Array.isArray(value) ? value : [value]));
}

/** Normalises a point id for comparison (UUIDs compare case-insensitively). */
export function idKey(id: unknown): string {
  return typeof id === "string" ? id.toLowerCase() : String(id);
}

function matches(values: unknown[], match: Json): boolean {
  if ("value" in match) return values.some((value) => value === match.value);
  if ("any" in match) {
    const any = asList(match.any);
    return values.some((value) => any.includes(value));
  }
  if ("except" in match) {
    const except = asList(match.except);
    return values.length === 0 || values.some((value) => !except.includes(value));
  }
  if ("text" in match || "phrase" in match) {
    const needle = String(match.text ?? match.phrase).toLowerCase();
    return values.some((value) => typeof value === "string" && value.toLowerCase().includes(needle));
  }
  if ("text_any" in match) {
    const words = String(match.text_any).toLowerCase().split(/\s+/u).filter(Boolean);
    return values.some(
      (value) => typeof value === "string" && words.some((word) => value.toLowerCase().includes(word)),
    );
  }
  throw new UnsupportedByFakeError(`match ${JSON.stringify(match)}`);
}

function inRange(value: number, range: Json): boolean {
  const bound = (name: string) => (typeof range[name] === "number" ? (range[name] as number) : undefined);
  const [lt, lte, gt, gte] = [bound("lt"), bound("lte"), bound("gt"), bound("gte")];
  return (
    (lt === undefined || value < lt) &&
    (lte === undefined || value <= lte) &&
    (gt === undefined || value > gt) &&
    (gte === undefined || value >= gte)
  );
}

const isEmptyAt = (point: FilterablePoint, key: string) => valuesAt(point.payload, key).length === 0;

function fieldCondition(point: FilterablePoint, condition: Json): boolean {
  const key = String(condition.key);
  const values = valuesAt(point.payload, key);
  for (const unsupported of ["geo_bounding_box", "geo_radius", "geo_polygon"]) {
    if (condition[unsupported] !== undefined && condition[unsupported] !== null) {
      throw new UnsupportedByFakeError(`${unsupported} conditions`);
    }
  }
  if (condition.match !== undefined && condition.match !== null)
    return matches(values, condition.match as Json);
  if (condition.range !== undefined && condition.range !== null) {
    const range = condition.range as Json;
    if (Object.values(range).some((bound) => typeof bound === "string")) {
      throw new UnsupportedByFakeError("datetime ranges");
    }
    return values.some((value) => typeof value === "number" && inRange(value, range));
  }
  if (condition.values_count !== undefined && condition.values_count !== null) {
    return inRange(values.length, condition.values_count as Json);
  }
  if (condition.is_empty === true) return isEmptyAt(point, key);
  if (condition.is_empty === false) return !isEmptyAt(point, key);
  if (condition.is_null === true) return valuesAt(point.payload, key).includes(null);
  if (condition.is_null === false) return !valuesAt(point.payload, key).includes(null);
  // Qdrant refuses a field condition without any check.
  throw new UnsupportedByFakeError(`field condition on "${key}" without a check`);
}

function condition(point: FilterablePoint, node: Json): boolean {
  if (typeof node.key === "string") return fieldCondition(point, node);
  if (typeof node.is_empty === "object" && node.is_empty !== null) {
    return isEmptyAt(point, String((node.is_empty as Json).key));
  }
  if (typeof node.is_null === "object" && node.is_null !== null) {
    return valuesAt(point.payload, String((node.is_null as Json).key)).includes(null);
  }
  if (Array.isArray(node.has_id)) return node.has_id.some((id) => idKey(id) === idKey(point.id));
  if (typeof node.has_vector === "string") return point.vectorNames.has(node.has_vector);
  if (node.nested !== undefined) throw new UnsupportedByFakeError("nested conditions");
  return matchesFilter(point, node);
}

/**
 * Whether a point passes a Qdrant filter: every `must`, at least one `should` (when any are
 * given), no `must_not`, and `min_should.min_count` of its conditions.
 */
export function matchesFilter(point: FilterablePoint, filter: unknown): boolean {
  if (filter === undefined || filter === null) return true;
  const node = filter as Json;
  const check = (item: unknown) => condition(point, item as Json);
  const must = asList(node.must);
  const should = asList(node.should);
  const mustNot = asList(node.must_not);
  if (!must.every(check)) return false;
  if (should.length > 0 && !should.some(check)) return false;
  if (mustNot.some(check)) return false;
  const minShould = node.min_should as Json | null | undefined;
  if (minShould !== undefined && minShould !== null) {
    const passed = asList(minShould.conditions).filter(check).length;
    if (passed < Number(minShould.min_count)) return false;
  }
  return true;
}
