import { type AnswerFormat, FORMAT_PARAMETER, GEOJSON_CONTENT_TYPE } from "../answer-format.js";
import { OGC_DOCUMENT_FORMATS, OGC_FORMATS } from "../ogc/negotiate.js";
import type { Parameter } from "./types.js";

/**
 * The `f` parameter (docs/api.md §16): a meaning for each of answer-format.ts's formats, typed by
 * AnswerFormat, so a new format fails to compile until it is described here.
 */
const REST_FORMATS: Readonly<Record<AnswerFormat, string>> = {
  json: "the record JSON of docs/api.md §4 (the default)",
  geojson: `GeoJSON (${GEOJSON_CONTENT_TYPE})`,
};

/** `f` on GET /sources, GET /sources/{id} and the searches: wins over the Accept header. */
export const REST_FORMAT_PARAMETER: Parameter = {
  name: FORMAT_PARAMETER,
  in: "query",
  description: `The answer's format, over the Accept header: ${Object.entries(REST_FORMATS)
    .map(([name, meaning]) => `\`${name}\` ${meaning}`)
    .join(", ")}.`,
  schema: { type: "string", enum: Object.keys(REST_FORMATS), default: "json" },
};

/** `f` on OGC items: both values name GeoJSON, the only encoding of items (ogc/negotiate.ts). */
export const OGC_ITEMS_FORMAT_PARAMETER: Parameter = {
  name: FORMAT_PARAMETER,
  in: "query",
  description: "Both values answer GeoJSON (application/geo+json); over the Accept header.",
  schema: { type: "string", enum: [...OGC_FORMATS] },
};

/** `f` on the OGC landing page, conformance and collections: JSON only. */
export const OGC_DOCUMENT_FORMAT_PARAMETER: Parameter = {
  name: FORMAT_PARAMETER,
  in: "query",
  description: "The only format of these documents.",
  schema: { type: "string", enum: [...OGC_DOCUMENT_FORMATS] },
};
