// RFC 3339 §5.6 date-time; the time zone offset is mandatory, `T`/`Z` may be lower case.
const DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9})\d*)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** An RFC 3339 date-time with an offset → Timestamp fields, or null when malformed or impossible. */
export function parseRfc3339(text: string): { seconds: bigint; nanos: number } | null {
  const m = DATE_TIME.exec(text);
  if (!m) return null;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  // Leap seconds (:60) cannot be represented by Timestamp or by epoch time.
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (!m[8]) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return null;
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  // setUTCFullYear counts in the proleptic Gregorian calendar, years 0–99 too (Date.UTC would read
  // them as 1900–1999); a day that does not exist (February 30) rolls over, so it is caught here.
  const utc = new Date(0);
  utc.setUTCFullYear(year, month - 1, day);
  if (utc.getUTCFullYear() !== year || utc.getUTCMonth() !== month - 1 || utc.getUTCDate() !== day) return null;
  utc.setUTCHours(hour, minute, second, 0);
  const seconds = BigInt(utc.getTime() / 1000 - offsetMinutes * 60);
  const nanos = m[7] ? Number(m[7].padEnd(9, "0")) : 0;
  return { seconds, nanos };
}

/**
 * Recently formatted instants. Every record carries four times and many records share their
 * period (start_at, end_at), so a page of 100 records formats a few distinct values hundreds of
 * times, and formatting showed in the read profiles (docs/benchmarks.md). Cleared when full, so it
 * stays small.
 */
const recentlyFormatted = new Map<number, string>();
const MAX_REMEMBERED = 4_096;

/** Epoch milliseconds → `2024-01-01T00:00:00.000Z`. */
export function formatRfc3339(ms: number): string {
  let text = recentlyFormatted.get(ms);
  if (text === undefined) {
    text = new Date(ms).toISOString();
    if (recentlyFormatted.size >= MAX_REMEMBERED) recentlyFormatted.clear();
    recentlyFormatted.set(ms, text);
  }
  return text;
}
