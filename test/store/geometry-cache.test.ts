import { describe, expect, it } from "vitest";
import type { SourceGeometry } from "../../src/geo/types.js";
import { GeometryCache } from "../../src/store/geometry-cache.js";

/** A square ring of `positions` positions (closing one included), distinct per call. */
function geometryOf(positions: number): SourceGeometry {
  const ring = Array.from({ length: positions - 1 }, (_, i): [number, number] => [i, i % 2]);
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

describe("GeometryCache", () => {
  it("drops the least recently used once the positions held pass its budget", () => {
    const cache = new GeometryCache<null, string>(200);
    const [a, b, c] = [geometryOf(100), geometryOf(100), geometryOf(100)];
    cache.put("a", a);
    cache.put("b", b);
    expect(cache.get("a")).toBe(a);
    cache.put("c", c);
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toBe(a);
    expect(cache.get("c")).toBe(c);
    // Larger than the whole budget: never kept.
    cache.put("d", geometryOf(201));
    expect(cache.get("d")).toBeUndefined();
    expect(cache.size).toBe(2);
  });

  it("keeps what was used within keepUsedWithinMs, and does not keep the newcomer instead", () => {
    let now = 0;
    const cache = new GeometryCache<null, string>(200, 1_000, () => now);
    const loads: string[] = [];
    const load = (key: string) => () => {
      loads.push(key);
      return geometryOf(100);
    };
    // Three geometries read in turn, over and over, by a cache that holds two.
    for (let round = 0; round < 4; round++) {
      for (const key of ["a", "b", "c"]) {
        cache.getOrLoad(key, load(key));
        now += 10;
      }
    }
    // a and b are loaded once and kept; c is loaded every round. Least recently used alone would
    // load all three every round.
    expect(loads).toEqual(["a", "b", "c", "c", "c", "c"]);
    // Once a has not been used for longer than that, it gives way.
    now += 5_000;
    cache.getOrLoad("b", load("b"));
    cache.getOrLoad("c", load("c"));
    expect(cache.getOrLoad("c", load("c"))).toBeDefined();
    expect(loads).toEqual(["a", "b", "c", "c", "c", "c", "c"]);
  });

  it("counts an entry's use from when it was kept and from each read since, not from its first", () => {
    let now = 10_000;
    const cache = new GeometryCache<null, string>(200, 1_000, () => now);
    const [a, b] = [geometryOf(100), geometryOf(100)];
    cache.put("a", a);
    cache.put("b", b);
    // Kept 500 ms ago: still in use.
    now += 500;
    cache.put("c", geometryOf(100));
    expect(cache.get("c")).toBeUndefined();
    // Read every 400 ms for 5 s: kept long ago, but still in use.
    for (let step = 0; step < 12; step++) {
      now += 400;
      expect(cache.get("a")).toBe(a);
      expect(cache.get("b")).toBe(b);
    }
    cache.put("c", geometryOf(100));
    expect(cache.get("c")).toBeUndefined();
    expect(cache.size).toBe(2);
  });
});
