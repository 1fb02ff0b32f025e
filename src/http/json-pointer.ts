/**
 * Where a violation points (docs/api.md §6): an RFC 6901 JSON pointer into the body, or
 * `/query/<name>` for a query parameter. A name is one reference token, so `~` and `/` in it (a
 * caller's unknown parameter or member can hold either) are escaped as `~0` and `~1`.
 */

/** `name` as one JSON pointer reference token (RFC 6901 §3). */
export function pointerToken(name: string): string {
  return name.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** How every query parameter's pointer starts. */
export const QUERY_POINTER_PREFIX = "/query/";

/** Where a problem with the query parameter `name` points. */
export function queryPointer(name: string): string {
  return `${QUERY_POINTER_PREFIX}${pointerToken(name)}`;
}
