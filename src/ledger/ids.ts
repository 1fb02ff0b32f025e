import { randomFillSync, randomUUID } from "node:crypto";
import { monotonicFactory } from "ulid";

/** How a ledger names new sources: production and sandbox differ only here and in their store. */
export type IdScheme = () => string;

/** Random bytes drawn per refill of the pool behind ULIDs' random part. */
const POOL_BYTES = 256;

/**
 * ulid's own PRNG makes one `crypto.getRandomValues` call per character, 16 per id (~17 µs of a
 * create, `randomFillSync` in the profiles); this one hands out the bytes of one call per 256.
 * Each byte / 256 is uniform in [0, 1) over 256 steps, so each of the 32 characters is exactly
 * equally likely.
 */
export function pooledRandom(fill: (pool: Uint8Array) => void = randomFillSync): () => number {
  const pool = new Uint8Array(POOL_BYTES);
  let next = POOL_BYTES;
  return () => {
    if (next === POOL_BYTES) {
      fill(pool);
      next = 0;
    }
    return pool[next++] / 256;
  };
}

/** `src_` + a ULID; monotonic so ids created in the same millisecond still sort in creation order. */
export function productionIds(): IdScheme {
  const next = monotonicFactory(pooledRandom());
  return () => `src_${next()}`;
}

/** `sandbox_` + a UUID v4. */
export function sandboxIds(): IdScheme {
  return () => `sandbox_${randomUUID()}`;
}
