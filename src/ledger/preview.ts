const MAX_PREVIEW = 80;

/** A client's text cut after 80 characters with `…`, unquoted: for paths and names in messages. */
export function shortened(text: string): string {
  return wellFormed(text.length > MAX_PREVIEW ? `${cutAt(text, MAX_PREVIEW)}…` : text);
}

/** A text with each unpaired surrogate (a client's, kept in a message) as U+FFFD. */
export function wellFormed(text: string): string {
  return text.replace(/\p{Cs}/gu, "\uFFFD");
}

/**
 * The first `units` UTF-16 units of a text, one fewer when that would split a surrogate pair: half
 * a pair is not Unicode, and encodeURIComponent (grpc-message) throws on it.
 */
export function cutAt(text: string, units: number): string {
  const code = text.charCodeAt(units - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? units - 1 : units);
}

/**
 * A short, safe rendering of a client's value for an error message. Bounded in depth and length,
 * so a hostile value (deeply nested, huge) can neither overflow the stack nor bloat the answer.
 */
export function preview(value: unknown, depth = 0): string {
  if (value === null || typeof value === "number" || typeof value === "boolean") return String(value);
  if (value === undefined) return "nothing";
  if (typeof value === "string") {
    return JSON.stringify(shortened(value));
  }
  if (depth >= 2) return Array.isArray(value) ? "[…]" : "{…}";
  if (Array.isArray(value)) {
    const items = value.slice(0, 4).map((item) => preview(item, depth + 1));
    return `[${items.join(",")}${value.length > 4 ? ",…" : ""}]`;
  }
  if (typeof value === "object") {
    const keys = Object.keys(value);
    return `{${keys
      .slice(0, 4)
      .map((k) => JSON.stringify(k.slice(0, MAX_PREVIEW)))
      .join(",")}${keys.length > 4 ? ",…" : ""}}`;
  }
  return typeof value;
}
