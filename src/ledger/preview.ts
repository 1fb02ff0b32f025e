const MAX_PREVIEW = 80;

// With the u flag a surrogate pair is one character, so this matches only an unpaired surrogate.
const UNPAIRED_SURROGATE = /\p{Cs}/u;
const UNPAIRED_SURROGATES = new RegExp(UNPAIRED_SURROGATE, "gu");

/** Where a text's first unpaired surrogate is (a UTF-16 index), or -1: such text is not Unicode. */
export function firstUnpairedSurrogate(text: string): number {
  return text.search(UNPAIRED_SURROGATE);
}

/**
 * A client's text cut after `max` UTF-16 units (80 unless given) with `…`, unquoted, and Unicode:
 * a cut never splits a surrogate pair and an unpaired surrogate shows as U+FFFD (encodeURIComponent,
 * which writes grpc-message, throws on either). For paths, names and status messages.
 */
export function shortened(text: string, max = MAX_PREVIEW): string {
  let cut = text;
  if (text.length > max) {
    const last = text.charCodeAt(max - 1);
    cut = `${text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max)}…`;
  }
  return cut.replace(UNPAIRED_SURROGATES, "\uFFFD");
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
