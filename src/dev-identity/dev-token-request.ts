import { formDecode } from "../http/querystring.js";
import { invalidRequest, type Outcome } from "./oauth-error.js";

/** The parameters of a client-credentials token request, wherever in the request they came from. */
export interface TokenRequestParams {
  grantType: string | null;
  clientId: string | null;
  clientSecret: string | null;
  audience: string | null;
  scope: string | null;
  /** The credentials came in an `Authorization: Basic` header (RFC 6749 §2.3.1). */
  usedBasic: boolean;
}

export interface RawTokenRequest {
  contentType: string | undefined;
  body: Buffer | undefined;
  authorization: string | undefined;
}

type Field = "grantType" | "clientId" | "clientSecret" | "audience" | "scope";

const FIELDS: Readonly<Record<Field, string>> = {
  grantType: "grant_type",
  clientId: "client_id",
  clientSecret: "client_secret",
  audience: "audience",
  scope: "scope",
};
const FIELD_NAMES: readonly Field[] = ["grantType", "clientId", "clientSecret", "audience", "scope"];
type BodyParams = Record<Field, string | null>;

/**
 * Reads a token request sent as JSON (what the interface documents) or as an HTML form (what RFC
 * 6749 specifies), with client credentials in the body or in HTTP Basic. No error message quotes
 * the body: it holds the client secret.
 */
export function readTokenRequest(raw: RawTokenRequest): Outcome<TokenRequestParams> {
  const body = readBody(raw.contentType, raw.body);
  if (!body.ok) return body;
  const basic = readBasic(raw.authorization);
  if (!basic.ok) return basic;
  const params = body.value;
  if (basic.value === null) return { ok: true, value: { ...params, usedBasic: false } };
  if (params.clientSecret !== null) {
    return invalidRequest("client credentials must be sent either in the body or with HTTP Basic, not both");
  }
  if (params.clientId !== null && params.clientId !== basic.value.clientId) {
    return invalidRequest("client_id differs from the HTTP Basic credentials");
  }
  return { ok: true, value: { ...params, ...basic.value, usedBasic: true } };
}

function readBody(contentType: string | undefined, body: Buffer | undefined): Outcome<BodyParams> {
  const mediaType = (contentType ?? "").split(";")[0].trim().toLowerCase();
  const text = body === undefined ? "" : body.toString("utf8");
  if (mediaType === "application/json") return readJson(text);
  if (mediaType === "application/x-www-form-urlencoded") return readForm(text);
  return invalidRequest("content type must be application/json or application/x-www-form-urlencoded");
}

function readJson(text: string): Outcome<BodyParams> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return invalidRequest("body is not valid JSON");
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return invalidRequest("body must be a JSON object");
  }
  const record: Record<string, unknown> = { ...json };
  const params = emptyParams();
  for (const field of FIELD_NAMES) {
    const value = record[FIELDS[field]];
    if (value === undefined || value === null) continue;
    if (typeof value !== "string") return invalidRequest(`${FIELDS[field]} must be a string`);
    params[field] = presentOrNull(value);
  }
  return { ok: true, value: params };
}

function readForm(text: string): Outcome<BodyParams> {
  const form = new URLSearchParams(text);
  const params = emptyParams();
  for (const field of FIELD_NAMES) {
    const values = form.getAll(FIELDS[field]);
    // RFC 6749 §3.2: request parameters must not be repeated.
    if (values.length > 1) return invalidRequest(`${FIELDS[field]} must not be repeated`);
    params[field] = presentOrNull(values[0]);
  }
  return { ok: true, value: params };
}

function readBasic(authorization: string | undefined): Outcome<{ clientId: string; clientSecret: string } | null> {
  const match = /^basic +(\S+)\s*$/i.exec(authorization ?? "");
  if (match === null) return { ok: true, value: null };
  const decoded = Buffer.from(match[1], "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon < 0) return invalidRequest("malformed HTTP Basic credentials");
  // RFC 6749 §2.3.1: both parts are form-urlencoded before being joined.
  const clientId = formDecode(decoded.slice(0, colon));
  const clientSecret = formDecode(decoded.slice(colon + 1));
  if (clientId === null || clientSecret === null) return invalidRequest("malformed HTTP Basic credentials");
  return { ok: true, value: { clientId, clientSecret } };
}

function emptyParams(): BodyParams {
  return { grantType: null, clientId: null, clientSecret: null, audience: null, scope: null };
}

/** RFC 6749 §3.1: a parameter sent without a value is treated as omitted. */
function presentOrNull(value: string | undefined): string | null {
  return value === undefined || value === "" ? null : value;
}
