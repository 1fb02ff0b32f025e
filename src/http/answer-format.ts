import Negotiator from "negotiator";
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
    query.reject(FORMAT_PARAMETER, `${FORMAT_PARAMETER} must be ${expected}, got "${asked}"`);
  }
  return asked;
}

/**
 * The best of `offered` for an Accept header (RFC 9110 §12.5.1, q-values and specificity; ties go
 * to the earlier offer): the first when the header is absent or empty, undefined when it admits
 * none of them (406). Every adapter negotiates through this.
 */
export function preferredMediaType(accept: string | undefined, offered: readonly string[]): string | undefined {
  if (accept === undefined || accept.trim() === "") return offered[0];
  return new Negotiator({ headers: { accept } }).mediaType([...offered]);
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
