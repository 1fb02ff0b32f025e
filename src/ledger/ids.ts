import { randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

/** How a ledger names new sources: production and sandbox differ only here and in their store. */
export type IdScheme = () => string;

/** `src_` + a ULID; monotonic so ids created in the same millisecond still sort in creation order. */
export function productionIds(): IdScheme {
  const next = monotonicFactory();
  return () => `src_${next()}`;
}

/** `sandbox_` + a UUID v4. */
export function sandboxIds(): IdScheme {
  return () => `sandbox_${randomUUID()}`;
}
