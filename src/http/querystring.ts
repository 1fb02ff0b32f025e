/** Names of query parameters whose percent-encoding is malformed, kept on the parsed query. */
export const MALFORMED_QUERY = Symbol("malformed query parameters");

export type ParsedQuery = Record<string, string | string[]> & { [MALFORMED_QUERY]?: string[] };

/** Form-urlencoded decoding (`+` is a space); null when a percent-escape is malformed. */
export function formDecode(text: string): string | null {
  // Most names and values need no decoding at all; this runs for every one of every request.
  if (text.indexOf("%") < 0 && text.indexOf("+") < 0) return text;
  try {
    return decodeURIComponent(text.replace(/\+/g, " "));
  } catch {
    return null;
  }
}

/**
 * application/x-www-form-urlencoded query parsing that notices malformed percent-escapes instead
 * of guessing (Fastify's default decodes them leniently), so the REST adapter can answer 422
 * pointing at the parameter, after authentication like every other validation error.
 */
export function parseQueryString(text: string): ParsedQuery {
  const query: ParsedQuery = Object.create(null) as ParsedQuery;
  for (const pair of text.split("&")) {
    if (pair === "") continue;
    const at = pair.indexOf("=");
    const rawName = at < 0 ? pair : pair.slice(0, at);
    const name = formDecode(rawName) ?? rawName;
    const value = formDecode(at < 0 ? "" : pair.slice(at + 1));
    if (value === null) {
      query[MALFORMED_QUERY] ??= [];
      query[MALFORMED_QUERY].push(name);
      continue;
    }
    const existing = query[name];
    if (existing === undefined) query[name] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else query[name] = [existing, value];
  }
  return query;
}
