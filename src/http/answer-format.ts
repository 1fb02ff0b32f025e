import { preview } from "../ledger/preview.js";
import { type ProblemDetails, problem } from "./problem.js";
import type { QueryReader } from "./rest-query.js";

/** What a list or a get answers in (docs/api.md §16): the record JSON of §4, or GeoJSON. */
export type AnswerFormat = "json" | "geojson";

export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";
export const GEOJSON_CONTENT_TYPE = "application/geo+json";

/** The query parameter that names the format; it wins over the Accept header. */
export const FORMAT_PARAMETER = "f";

/** Each format's media type, in the order preferred when the Accept header ranks them equal. */
const MEDIA_TYPES: Readonly<Record<AnswerFormat, string>> = {
  json: "application/json",
  geojson: GEOJSON_CONTENT_TYPE,
};
const FORMATS = Object.keys(MEDIA_TYPES) as AnswerFormat[];
const FORMAT_OF_MEDIA_TYPE = new Map(FORMATS.map((format) => [MEDIA_TYPES[format], format]));

/**
 * The 406 of every adapter (REST, OGC API, the OpenAPI document): the media types `offered`, and
 * the values of `f` that name them, if the resource takes `f`.
 */
export function notAcceptable(offered: readonly string[], formats: readonly string[] = []): ProblemDetails {
  const orF = formats.length === 0 ? "" : `, or with ${formats.map((f) => `${FORMAT_PARAMETER}=${f}`).join(" or ")}`;
  return problem(
    406,
    "invalid_argument",
    `this resource answers ${offered.join(" or ")}; ask with an Accept header that admits one${orF}`,
  );
}

/** REST's 406: its two formats. */
export const notAcceptableFormat = () =>
  notAcceptable(
    FORMATS.map((format) => MEDIA_TYPES[format]),
    FORMATS,
  );

/**
 * The `f` parameter when given; a value not in `allowed` is also a violation of the query, and is
 * returned as given (the caller reads on as it sees fit: the answer is a 4xx either way).
 */
export function formatParameter(query: QueryReader, allowed: readonly string[]): string | undefined {
  const asked = query.text(FORMAT_PARAMETER);
  if (asked !== undefined && !allowed.includes(asked)) {
    const expected = allowed.length === 1 ? allowed[0] : `one of ${allowed.join(", ")}`;
    query.reject(FORMAT_PARAMETER, `${FORMAT_PARAMETER} must be ${expected}, got ${preview(asked)}`);
  }
  return asked;
}

/**
 * The best of `offered` for an Accept header (RFC 9110 §12.5.1): the highest q-value, then the
 * most specific range that admits it (an exact type over a subtype wildcard over the full one), then the earlier
 * offer, so that the first offer wins whenever the header ranks two alike, whatever order the
 * header names them in (negotiator breaks such ties by the header's order). The first offer when
 * the header is absent or empty; undefined when it admits none of them (406). Every adapter
 * negotiates through this.
 */
export function preferredMediaType(accept: string | undefined, offered: readonly string[]): string | undefined {
  if (accept === undefined || accept.trim() === "") return offered[0];
  const ranked = offered.map((type, index) => ({ type, index, ...rankOf(accept, type) }));
  const admitted = ranked.filter((offer) => offer.q > 0);
  admitted.sort((a, b) => b.q - a.q || b.specificity - a.specificity || a.index - b.index);
  return admitted[0]?.type;
}

/**
 * How an Accept header ranks one media type (without parameters), as negotiator ranks it: the
 * q-value of the most specific range admitting it (type 4 + subtype 2 + parameters 1; a range
 * with a parameter other than q admits it only with the value `*`, or `charset=utf-8`), the higher
 * q among equals.
 */
function rankOf(accept: string, type: string): { q: number; specificity: number } {
  const [offeredName = "", ...offeredParameters] = type.split(";").map((part) => part.trim());
  const [mainType, subtype] = offeredName.toLowerCase().split("/");
  const offeredValue = new Map(
    offeredParameters.map((parameter) => {
      const [key = "", value = ""] = parameter.split("=").map((part) => part.trim());
      return [key.toLowerCase(), value.replaceAll('"', "").toLowerCase()];
    }),
  );
  let best = { q: 0, specificity: -1 };
  for (const range of accept.split(",")) {
    const [name = "", ...parameters] = range.split(";").map((part) => part.trim());
    const [rangeType, rangeSubtype] = name.toLowerCase().split("/");
    if (rangeSubtype === undefined) continue;
    if (rangeType !== "*" && rangeType !== mainType) continue;
    if (rangeSubtype !== "*" && rangeSubtype !== subtype) continue;
    let q = 1;
    let others = false;
    let admits = true;
    for (const parameter of parameters) {
      const [key = "", raw = ""] = parameter.split("=").map((part) => part.trim());
      const name = key.toLowerCase();
      // Parameters after q are accept-extensions, not the media type's (RFC 9110 §12.5.1).
      if (name === "q") {
        q = Number.parseFloat(raw);
        break;
      }
      others = true;
      const value = raw.replaceAll('"', "").toLowerCase();
      // The offer's own parameter value, a wildcard, or (every answer is UTF-8) charset=utf-8.
      const utf8 = name === "charset" && value === "utf-8";
      if (value !== "*" && !utf8 && offeredValue.get(name) !== value) admits = false;
    }
    if (!admits) continue;
    const specificity = (rangeType === mainType ? 4 : 0) + (rangeSubtype === subtype ? 2 : 0) + (others ? 1 : 0);
    const quality = Number.isFinite(q) ? q : 0;
    if (specificity > best.specificity || (specificity === best.specificity && quality > best.q)) {
      best = { q: quality, specificity };
    }
  }
  return best;
}

/**
 * The answer's format: `f` when given (an unknown value is a violation of the query, and JSON is
 * assumed for the rest of the reading), else the best of the Accept header's media types (none:
 * JSON); null when the Accept header admits neither (406).
 */
export function answerFormatOf(query: QueryReader, accept: string | undefined): AnswerFormat | null {
  const asked = formatParameter(query, FORMATS);
  if (asked !== undefined) return (FORMATS as string[]).includes(asked) ? (asked as AnswerFormat) : "json";
  const best = preferredMediaType(
    accept,
    FORMATS.map((format) => MEDIA_TYPES[format]),
  );
  return best === undefined ? null : (FORMAT_OF_MEDIA_TYPE.get(best) ?? null);
}
