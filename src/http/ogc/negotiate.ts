import { formatParameter, GEOJSON_CONTENT_TYPE, notAcceptable, preferredMediaType } from "../answer-format.js";
import type { ProblemDetails } from "../problem.js";
import type { QueryReader } from "../rest-query.js";

/** The values of `f` an OGC items request takes: both name GeoJSON, the only encoding of items. */
export const OGC_FORMATS: readonly string[] = ["json", "geojson"];

/** The values of `f` the OGC documents (landing page, conformance, collections) take: JSON only. */
export const OGC_DOCUMENT_FORMATS: readonly string[] = ["json"];

/** The media types an items answer is named by, GeoJSON's first. */
const ITEM_MEDIA_TYPES = [GEOJSON_CONTENT_TYPE, "application/json"];

/**
 * The media type of an items answer: GeoJSON, named `application/geo+json` unless the Accept header
 * admits only `application/json`; null when the Accept header admits neither (406). `f`, when
 * given, wins over the header; an unknown value is a violation of the query.
 */
export function ogcAnswerType(query: QueryReader, accept: string | undefined): string | null {
  if (formatParameter(query, OGC_FORMATS) !== undefined) return GEOJSON_CONTENT_TYPE;
  return preferredMediaType(accept, ITEM_MEDIA_TYPES) ?? null;
}

/** An items request's 406. */
export const itemsNotAcceptable = (): ProblemDetails => notAcceptable(ITEM_MEDIA_TYPES, OGC_FORMATS);
