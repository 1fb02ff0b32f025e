import { Clipper64, ClipType, FillRule, type Path64, type PolyPath64, PolyTree64 } from "clipper2-ts";
import type { OverlayEngine } from "./overlay-engines.js";
import type { PolygonCoordinates, Position } from "./types.js";

/**
 * Grid steps across the inputs' extent. Clipper2 decides on integer coordinates (its orientation
 * tests go to BigInt once products outgrow doubles). 2⁴⁰ steps resolve a 1° extent to
 * ~1e-12° (0.1 µm), which keeps areas to ~1e-11 relative even for a comb of 8,000 teeth, whose
 * perimeter is thousands of times its width; 2²⁶, where Clipper2 never needs BigInt, was 1.5–2×
 * faster but 1.4e-7 off on that comb.
 */
const GRID_STEPS = 2 ** 40;
/** Integer coordinates stay below 2⁵², where doubles still hold every integer. */
const MAX_SCALE = 2 ** 44;

/**
 * Clipper2's overlay (Vatti's scan-beam algorithm: O((n + k) log n) for n edges and k
 * intersections, with exact integer predicates) on the inputs snapped to a power-of-two grid
 * fitted to their extent: 5–40 times faster than JTS on large or intricate inputs, and bounded by
 * the intersections it must find rather than by how the inputs overlap along one axis. Not the
 * first engine: it rounds to the grid, where JTS keeps every coordinate (overlay-plan.ts).
 */
export const clipperEngine: OverlayEngine = {
  name: "clipper2",
  intersection: (a, b) => {
    const grid = Grid.fitting([a, b]);
    const clipper = new Clipper64();
    clipper.addSubject(grid.paths(a));
    clipper.addClip(grid.paths(b));
    return grid.polygons(execute(clipper, ClipType.Intersection));
  },
  union: (inputs) => {
    const grid = Grid.fitting(inputs);
    const clipper = new Clipper64();
    clipper.addSubject(inputs.flatMap((polygons) => grid.paths(polygons)));
    return grid.polygons(execute(clipper, ClipType.Union));
  },
};

function execute(clipper: Clipper64, operation: ClipType): PolyTree64 {
  const tree = new PolyTree64();
  // Non-zero winding with exteriors one way round and holes the other (Grid.paths): overlapping
  // polygons of one input count once, and a hole is empty.
  if (!clipper.execute(operation, FillRule.NonZero, tree)) throw new Error("Clipper2 could not complete the overlay");
  return tree;
}

/** A power-of-two grid (so scaling is exact) fitted to the extent of the inputs. */
class Grid {
  private constructor(private readonly scale: number) {}

  static fitting(inputs: readonly PolygonCoordinates[][]): Grid {
    let minX = Number.POSITIVE_INFINITY;
    let maxX = Number.NEGATIVE_INFINITY;
    let minY = Number.POSITIVE_INFINITY;
    let maxY = Number.NEGATIVE_INFINITY;
    for (const polygons of inputs) {
      for (const rings of polygons) {
        for (const [x, y] of rings[0]) {
          if (x < minX) minX = x;
          if (x > maxX) maxX = x;
          if (y < minY) minY = y;
          if (y > maxY) maxY = y;
        }
      }
    }
    const extent = Math.max(maxX - minX, maxY - minY);
    const scale = extent > 0 ? 2 ** Math.floor(Math.log2(GRID_STEPS / extent)) : MAX_SCALE;
    return new Grid(Math.min(scale, MAX_SCALE));
  }

  /** Each polygon's rings on the grid, the exterior counter-clockwise and the holes clockwise. */
  paths(polygons: PolygonCoordinates[]): Path64[] {
    const paths: Path64[] = [];
    for (const rings of polygons) {
      rings.forEach((ring, index) => {
        const path: Path64 = [];
        // GeoJSON rings repeat their first position at the end; Clipper2's paths are implicitly closed.
        for (let i = 0; i < ring.length - 1; i++) {
          path.push({ x: Math.round(ring[i][0] * this.scale), y: Math.round(ring[i][1] * this.scale) });
        }
        if ((index === 0) !== doubledArea(path) > 0) path.reverse();
        paths.push(path);
      });
    }
    return paths;
  }

  /** The tree's polygons in GeoJSON form: each outer ring with its holes; islands in holes are polygons of their own. */
  polygons(tree: PolyTree64): PolygonCoordinates[] {
    const polygons: PolygonCoordinates[] = [];
    const outers: PolyPath64[] = [];
    for (let i = 0; i < tree.count; i++) outers.push(tree.child(i));
    for (let outer = outers.pop(); outer !== undefined; outer = outers.pop()) {
      if (outer.polygon === null) continue;
      const rings = [this.ring(outer.polygon)];
      for (let h = 0; h < outer.count; h++) {
        const hole = outer.child(h);
        if (hole.polygon !== null) rings.push(this.ring(hole.polygon));
        for (let i = 0; i < hole.count; i++) outers.push(hole.child(i));
      }
      polygons.push(rings);
    }
    return polygons;
  }

  private ring(path: Path64): Position[] {
    const ring: Position[] = path.map(({ x, y }) => [x / this.scale, y / this.scale]);
    ring.push([ring[0][0], ring[0][1]]);
    return ring;
  }
}

/** Twice the signed (shoelace) area of a path; positive when counter-clockwise. */
function doubledArea(path: Path64): number {
  let sum = 0;
  for (let i = 0, j = path.length - 1; i < path.length; j = i++) {
    sum += (path[j].x - path[0].x) * (path[i].y - path[0].y) - (path[i].x - path[0].x) * (path[j].y - path[0].y);
  }
  return sum;
}
