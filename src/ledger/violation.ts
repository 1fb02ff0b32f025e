/**
 * One reason a request is invalid. Structured rather than pre-rendered so that each transport can
 * point at the field in its own terms: a proto field path for Connect/gRPC, a JSON pointer into
 * the request body for REST.
 */
export interface Violation {
  /** Index of the source in the request; absent for request-level fields. */
  source?: number;
  /** snake_case field name: a SourceInput field when `source` is set, else a request field. */
  field: string;
  /** Element of a repeated field (tags, attribute_type). */
  index?: number;
  /** Which geometry kind `coordinates` indexes into. */
  geometryKind?: "polygon" | "multi_polygon";
  /** Index path into the GeoJSON `coordinates` of the geometry. */
  coordinates?: number[];
  detail: string;
  /**
   * A JSON pointer set by a transport that found the problem in its own wire form; otherwise the
   * transport derives one from the fields above.
   */
  pointer?: string;
}

/** `field` of a violation about a whole source that could not be read at all (not an object). */
export const WHOLE_SOURCE = "source";

/** Identifies the value a violation is about, to merge reports from two checkers without repeats. */
export function violationKey(v: Violation): string {
  return `${v.source ?? ""}|${v.field}|${v.index ?? ""}`;
}

/** `sources[3].geometry.polygon.rings[0].coordinates[4]`: the field path in the request message. */
export function violationFieldPath(v: Violation): string {
  let path = v.source === undefined ? v.field : `sources[${v.source}].${v.field}`;
  if (v.index !== undefined) path += `[${v.index}]`;
  if (v.coordinates && v.geometryKind) path += geometrySuffix(v.geometryKind, v.coordinates);
  return path;
}

function geometrySuffix(kind: "polygon" | "multi_polygon", coordinates: number[]): string {
  const [polygon, ring, position] = kind === "polygon" ? [undefined, ...coordinates] : coordinates;
  let path = kind === "polygon" ? ".polygon" : ".multi_polygon";
  if (kind === "multi_polygon" && polygon !== undefined) path += `.polygons[${polygon}]`;
  if (ring !== undefined) path += `.rings[${ring}]`;
  if (position !== undefined) path += `.coordinates[${position * 2}]`;
  return path;
}
