import { monotonicFactory } from "ulid";
import { describe, expect, it } from "vitest";
import { pooledRandom, productionIds, sandboxIds } from "../../src/ledger/ids.js";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

describe("source ids", () => {
  it("production: src_ + a ULID, unique, in creation order", () => {
    const next = productionIds();
    const ids = Array.from({ length: 5_000 }, () => next());
    for (const id of ids) expect(id).toMatch(/^src_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
  });

  it("with the pooled source, every character of a ULID's random part takes all 32 values", () => {
    // A new millisecond for each id, so each random part is drawn (not incremented from the last).
    const next = monotonicFactory(pooledRandom());
    const seen = Array.from({ length: 16 }, () => new Set<string>());
    for (let i = 0; i < 2_000; i++) {
      const random = next(1_700_000_000_000 + i).slice(10);
      for (let c = 0; c < 16; c++) seen[c].add(random[c]);
    }
    for (const chars of seen) expect([...chars].sort().join("")).toBe(CROCKFORD);
  });

  it("the pooled random source: one fill per 256 draws, each byte / 256", () => {
    let fills = 0;
    const random = pooledRandom((pool) => {
      fills++;
      for (let i = 0; i < pool.length; i++) pool[i] = (i + fills) % 256;
    });
    const first = Array.from({ length: 256 }, () => random());
    expect(fills).toBe(1);
    expect(first[0]).toBe(1 / 256);
    expect(first[255]).toBe(0);
    expect(Math.max(...first)).toBe(255 / 256);
    random();
    expect(fills).toBe(2);
  });

  it("sandbox: sandbox_ + a UUID v4", () => {
    expect(sandboxIds()()).toMatch(/^sandbox_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
