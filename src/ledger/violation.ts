/**
 * One reason a request is invalid. Structured rather than pre-rendered so that each adapter can
 * point at the field in its own terms: a proto field path for Connect/gRPC, a JSON pointer into
 * the request body for REST.
 */
export interface Violation {
  /** Index of the source in the request; absent for request-level fields. */
  source?: number;
  /** snake_case field name: a source field when `source` is set, else a request field. */
  field: string;
  /** Element of a repeated field (tags, attribute_type). */
  index?: number;
  /** Which geometry kind `coordinates` indexes into. */
  geometryKind?: "polygon" | "multi_polygon";
  /** Index path into the GeoJSON `coordinates` of the geometry. */
  coordinates?: number[];
  detail: string;
  /**
   * Where the adapter that found the problem saw it in its own wire form (REST: a JSON pointer).
   * Opaque to the ledger; an adapter that did not set it derives its own from the fields above.
   */
  pointer?: string;
}

/** `field` of a violation about a whole source that could not be read at all (not an object). */
export const WHOLE_SOURCE = "source";

/** Identifies the value a violation is about, to merge reports from two checkers without repeats. */
export function violationKey(v: Violation): string {
  return `${v.source ?? ""}|${v.field}|${v.index ?? ""}`;
}

/**
 * What an adapter found while reading a request into domain form, merged with what the ledger
 * found: the adapter's first, and of the ledger's only those about another value and not about a
 * source the adapter could not read at all (nothing more about it is worth reporting).
 */
export function mergeViolations(read: readonly Violation[], found: readonly Violation[]): Violation[] {
  if (read.length === 0) return [...found];
  const seen = new Set(read.map(violationKey));
  const unreadable = new Set(read.filter((v) => v.field === WHOLE_SOURCE).map((v) => v.source));
  return [
    ...read,
    ...found.filter((v) => !seen.has(violationKey(v)) && !(v.source !== undefined && unreadable.has(v.source))),
  ];
}
