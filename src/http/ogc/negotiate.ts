import { FORMAT_PARAMETER, GEOJSON_CONTENT_TYPE, preferredMediaType } from "../answer-format.js";
import type { QueryReader } from "../rest-query.js";

/** The values of `f` an OGC items request takes: both name GeoJSON, the only encoding of items. */
export const OGC_FORMATS: readonly string[] = ["json", "geojson"];

/**
 * The media type of an items answer: GeoJSON, named `application/geo+json` unless the Accept header
 * admits only `application/json`; null when the Accept header admits neither (406). `f`, when
 * given, wins over the header; an unknown value is a violation of the query.
 */
export function ogcAnswerType(query: QueryReader, accept: string | undefined): string | null {
  const asked = query.text(FORMAT_PARAMETER);
  if (asked !== undefined) {
    if (!OGC_FORMATS.includes(asked)) {
      query.reject(FORMAT_PARAMETER, `${FORMAT_PARAMETER} must be one of ${OGC_FORMATS.join(", ")}, got "${asked}"`);
    }
    return GEOJSON_CONTENT_TYPE;
  }
  return preferredMediaType(accept, [GEOJSON_CONTENT_TYPE, "application/json"]) ?? null;
}
