import { RANGE_TOLERANCE_DEG } from "../geo/validity-structure.js";
import { firstUnpairedSurrogate } from "./preview.js";

/**
 * The field rules of docs/api.md §5, each written once and read by create and list alike.
 * Each returns why a value breaks the rule, or null.
 */

/** At most this many sources in one create request. */
export const MAX_SOURCES_PER_REQUEST = 1000;
/** alt_id, methodology, steward_id, project_id and account_id: 1 to this many characters. */
export const MAX_TEXT = 256;
export const MAX_TAGS = 64;
export const MAX_TAG = 128;
export const MIN_YEAR = 1000;
export const MAX_YEAR = 9999;
export const DEFAULT_LIST_LIMIT = 100;
export const MAX_LIST_LIMIT = 1000;

// C0 and C1 control characters, DEL included.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** Length in characters (code points), not UTF-16 units: "256 characters" means what a person counts. */
export function characters(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/**
 * Text that is not Unicode (a lone UTF-16 surrogate, which JSON's \ud800 escapes can carry): the
 * stores keep UTF-8, where it becomes U+FFFD, so two different alt_ids would be stored equal and a
 * record would read back otherwise than it was answered.
 */
function unicodeProblem(value: string, name: string): string | null {
  const at = firstUnpairedSurrogate(value);
  if (at < 0) return null;
  const code = value.charCodeAt(at).toString(16).toUpperCase();
  return `${name} must be Unicode text: it has an unpaired surrogate (U+${code}) at character ${characters(value.slice(0, at)) + 1}`;
}

/** 1–256 characters: alt_id, methodology, steward_id, project_id, account_id and the text filters. */
export function textProblem(value: string, name: string): string | null {
  const n = characters(value);
  if (n === 0) return `${name} must not be empty`;
  if (n > MAX_TEXT) return `${name} must be at most ${MAX_TEXT} characters, got ${n}`;
  return unicodeProblem(value, name);
}

/** alt_id: required, a text, no control characters, no white space at either end. */
export function altIdProblem(altId: string): string | null {
  if (altId === "") return "alt_id is required";
  const text = textProblem(altId, "alt_id");
  if (text) return text;
  if (CONTROL.test(altId)) return "alt_id must not contain control characters";
  if (altId.trim() !== altId) return "alt_id must not start or end with white space";
  return null;
}

/** outcome_reporting_year, on a source and as a filter. */
export function yearProblem(year: number, name: string): string | null {
  if (Number.isInteger(year) && year >= MIN_YEAR && year <= MAX_YEAR) return null;
  return `${name} must be a year from ${MIN_YEAR} to ${MAX_YEAR}, got ${year}`;
}

export function tagCountProblem(count: number): string | null {
  return count > MAX_TAGS ? `at most ${MAX_TAGS} tags are allowed, got ${count}` : null;
}

export function tagProblem(tag: string): string | null {
  const n = characters(tag);
  return n === 0 || n > MAX_TAG ? `a tag must be 1 to ${MAX_TAG} characters, got ${n}` : unicodeProblem(tag, "a tag");
}

/** An attribute type named again in one source's list. */
export function repeatedAttributeType(name: string): string {
  return `attribute_type ${name} is repeated`;
}

export function limitProblem(limit: number): string | null {
  const fits = Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIST_LIMIT;
  return fits ? null : `limit must be from 1 to ${MAX_LIST_LIMIT}, got ${limit}`;
}

export function offsetProblem(offset: number): string | null {
  return Number.isInteger(offset) && offset >= 0 ? null : `offset must be 0 or more, got ${offset}`;
}

/**
 * A longitude and a latitude in WGS 84 degrees, as every position of the service: the same
 * floating-point noise past the limits is accepted as in a geometry (docs/api.md §5.4).
 */
export function positionProblem(lon: number, lat: number, name: string): string | null {
  if (!Number.isFinite(lon) || !Number.isFinite(lat)) return `${name} must be finite numbers, got ${lon}, ${lat}`;
  if (Math.abs(lon) > 180 + RANGE_TOLERANCE_DEG) return `${name}: longitude must be from -180 to 180, got ${lon}`;
  if (Math.abs(lat) > 90 + RANGE_TOLERANCE_DEG) return `${name}: latitude must be from -90 to 90, got ${lat}`;
  return null;
}

/**
 * A box: its corners are positions and min is at most max on each axis. A box across the
 * antimeridian (west > east) is refused like every geometry crossing it (docs/api.md §5.4).
 */
export function boxProblem(box: { minX: number; minY: number; maxX: number; maxY: number }, name: string) {
  const corner =
    positionProblem(box.minX, box.minY, `${name} (min corner)`) ??
    positionProblem(box.maxX, box.maxY, `${name} (max corner)`);
  if (corner) return corner;
  if (box.minX > box.maxX) {
    return (
      `${name}: minLon ${box.minX} is greater than maxLon ${box.maxX}; a box may not cross the antimeridian ` +
      "(search each side with its own box)"
    );
  }
  if (box.minY > box.maxY) return `${name}: minLat ${box.minY} is greater than maxLat ${box.maxY}`;
  return null;
}
