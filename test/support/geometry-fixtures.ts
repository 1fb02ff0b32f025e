import type { PolygonGeometry, Position } from "../../src/geo/types.js";

// Conflicts are ledger-wide, so each test case gets its own patch of the earth.
let slot = 0;
/** The south-west corner of a fresh patch (5° apart) no other case of this file uses. */
export function patch(): Position {
  slot += 1;
  return [-170 + (slot % 60) * 5, -60 + Math.floor(slot / 60) * 5];
}

/** A closed lon/lat rectangle. */
export function ring(lon1: number, lat1: number, lon2: number, lat2: number): Position[] {
  return [
    [lon1, lat1],
    [lon2, lat1],
    [lon2, lat2],
    [lon1, lat2],
    [lon1, lat1],
  ];
}

/**
 * The unit square [0, 1]² with a notch in its southern edge near its south-west corner: not
 * convex, so its intersections go to the overlay engines (two convex rings need none,
 * src/geo/convex-clip.ts), while the notch stays clear of anything north-east of (0.5, 0.5).
 */
export function notchedUnitSquare(): PolygonGeometry {
  return {
    type: "Polygon",
    coordinates: [
      [
        [0, 0],
        [0.2, 0],
        [0.25, 0.1],
        [0.3, 0],
        [1, 0],
        [1, 1],
        [0, 1],
        [0, 0],
      ],
    ],
  };
}

/** A lon/lat cell relative to `origin`, in units of `unit` degrees (default: ~1 km fields). */
export function cellAt(origin: Position, x1: number, y1: number, x2: number, y2: number, unit = 0.01): PolygonGeometry {
  const [x, y] = origin;
  return { type: "Polygon", coordinates: [ring(x + x1 * unit, y + y1 * unit, x + x2 * unit, y + y2 * unit)] };
}

/** mulberry32. */
export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Two square fields of side `s` sharing the boundary x = x0 + s, each digitising it on its own:
 * k vertices along it, jittered by up to `eps` (1e-9° to 1e-15°), as two surveys of one fence.
 */
export function digitisedTwice(
  x0: number,
  y0: number,
  s: number,
  random: () => number,
): [PolygonGeometry, PolygonGeometry] {
  const k = 3 + Math.floor(random() * 20);
  const eps = 10 ** (-9 - Math.floor(random() * 7));
  const west: Position[] = [];
  const east: Position[] = [];
  for (let i = 0; i <= k; i++) {
    const inner = i !== 0 && i !== k;
    const y = y0 + (s * i) / k;
    west.push([x0 + s + (inner ? (random() - 0.5) * eps : 0), y]);
    east.push([x0 + s + (random() - 0.5) * eps, y + (inner ? (random() - 0.5) * eps : 0)]);
  }
  return [
    { type: "Polygon", coordinates: [[[x0, y0], ...west, [x0, y0 + s], [x0, y0]]] },
    { type: "Polygon", coordinates: [[east[0], [x0 + 2 * s, y0], [x0 + 2 * s, y0 + s], ...[...east].reverse()]] },
  ];
}
