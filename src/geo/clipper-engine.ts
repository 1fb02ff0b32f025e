import { Clipper, Clipper64, ClipType, FillRule, type Path64, type Paths64, PointInPolygonResult } from "clipper2-ts";
import { boundingBox } from "./bbox.js";
import { orient } from "./intersects.js";
import type { OverlayEngine } from "./overlay-engines.js";
import type { PolygonCoordinates, Position } from "./types.js";

/** Integer coordinates stay within ±2⁵², where doubles hold every integer and their differences. */
const MAX_INTEGER = 2 ** 52;

/**
 * How positions become Clipper2's integers: x → (x − originX) · scale, rounded. The origin is a
 * whole degree at or inside the inputs' extent on the side away from 0 (or 0 itself when the extent
 * reaches within a degree of 0), which makes the subtraction exact: x and the origin are multiples
 * of x's unit in the last place, and the difference is smaller than x. The scale is the largest
 * power of two that keeps every integer within ±2⁵². Scaling by a power of two is exact too, so a
 * position is moved only when its offset from the origin has bits finer than 1/scale, and then by
 * at most half of 1/scale, 2⁻⁵³ of the inputs' reach from the origin. Two fields near 50° get a
 * scale of 2⁵⁴ while their units in the last place are 2⁻⁴⁷: nothing moves. A field overlaid with
 * a 100° box is placed on the box's grid of ~2⁻⁴⁵°, ~1e-8 of a 1e-6° field's width.
 */
class Frame {
  private constructor(
    private readonly originX: number,
    private readonly originY: number,
    private readonly scale: number,
  ) {}

  static around(inputs: readonly PolygonCoordinates[][]): Frame {
    const { minX, maxX, minY, maxY } = boundingBox({ type: "MultiPolygon", coordinates: inputs.flat() });
    const originX = origin(minX, maxX);
    const originY = origin(minY, maxY);
    const reach = Math.max(
      Math.abs(minX - originX),
      Math.abs(maxX - originX),
      Math.abs(minY - originY),
      Math.abs(maxY - originY),
    );
    let scale = reach > 0 ? 2 ** Math.floor(Math.log2(MAX_INTEGER / reach)) : 1;
    // log2 may round up by one near a power of two.
    while (reach * scale > MAX_INTEGER) scale /= 2;
    return new Frame(originX, originY, scale);
  }

  /** Each polygon's rings as Clipper2 paths, the exterior counter-clockwise and the holes clockwise. */
  paths(polygons: PolygonCoordinates[]): Path64[] {
    const paths: Path64[] = [];
    for (const rings of polygons) {
      rings.forEach((ring, index) => {
        const path: Path64 = [];
        // GeoJSON rings repeat their first position at the end; Clipper2's paths are implicitly closed.
        for (let i = 0; i < ring.length - 1; i++) {
          path.push({
            x: Math.round((ring[i][0] - this.originX) * this.scale),
            y: Math.round((ring[i][1] - this.originY) * this.scale),
          });
        }
        const cleaned = withoutCollinear(path);
        if (cleaned.length === 0) return;
        if ((index === 0) !== doubledArea(cleaned) > 0) cleaned.reverse();
        paths.push(cleaned);
      });
    }
    return paths;
  }

  /**
   * Clipper2's flat rings in GeoJSON form: each outer ring (counter-clockwise) with the holes
   * (clockwise) it holds; an island in a hole is an outer ring of its own. Clipper2's own tree
   * output places each hole by walking every ring around it, holes × ring size (a polygon with
   * 10,000 holes took 6 s), so the holes are placed here instead: with one outer ring, all are its;
   * otherwise each goes to the smallest outer ring whose box holds it and which holds one of its
   * vertices.
   */
  polygons(paths: Paths64): PolygonCoordinates[] {
    const outers: Path64[] = [];
    const holes: Path64[] = [];
    for (const path of paths) {
      if (path.length < 3) continue;
      (doubledArea(path) > 0 ? outers : holes).push(path);
    }
    const polygons = outers.map((outer) => [this.ring(outer)]);
    if (outers.length === 1) {
      for (const hole of holes) polygons[0].push(this.ring(hole));
      return polygons;
    }
    const boxes = outers.map(pathBox);
    const areas = outers.map(doubledArea);
    for (const hole of holes) {
      const box = pathBox(hole);
      let owner = -1;
      for (let i = 0; i < outers.length; i++) {
        if (!boxHolds(boxes[i], box) || (owner !== -1 && areas[i] >= areas[owner])) continue;
        if (holds(outers[i], hole)) owner = i;
      }
      // Clipper2 gives no hole outside every outer ring; should rounding ever do so, keep the area.
      if (owner === -1) owner = areas.indexOf(Math.max(...areas));
      polygons[owner].push(this.ring(hole));
    }
    return polygons;
  }

  private ring(path: Path64): Position[] {
    const ring: Position[] = path.map(({ x, y }) => [x / this.scale + this.originX, y / this.scale + this.originY]);
    ring.push([ring[0][0], ring[0][1]]);
    return ring;
  }
}

/**
 * The path without its vertices that lie exactly on the line through their neighbours: straight
 * runs' inner vertices, repeated positions, and the tips of zero-width spikes (a run that goes out
 * and back along one line, as a clip's bridges and near-coincident vertices leave). None encloses
 * area, so the region is the same; clipper2-ts 2.0.1 returned wrong areas (even negative ones) and
 * once swept without end on such runs along its scan-lines (test/geo/clipper-engine.test.ts).
 * Empty when nothing with area is left.
 */
function withoutCollinear(path: Path64): Path64 {
  const kept: Path64 = [];
  for (const point of path) {
    while (kept.length >= 2 && collinear(kept[kept.length - 2], kept[kept.length - 1], point)) kept.pop();
    kept.push(point);
  }
  // Around the closing vertex, where the ring ends and starts again.
  for (let trimmed = true; trimmed && kept.length >= 3; ) {
    trimmed = false;
    if (collinear(kept[kept.length - 2], kept[kept.length - 1], kept[0])) {
      kept.pop();
      trimmed = true;
    } else if (collinear(kept[kept.length - 1], kept[0], kept[1])) {
      kept.shift();
      trimmed = true;
    }
  }
  return kept.length >= 3 ? kept : [];
}

/** Whether b lies on the line through a and c, exactly (orient's sign is exact). */
function collinear(a: { x: number; y: number }, b: { x: number; y: number }, c: { x: number; y: number }): boolean {
  return orient(a.x, a.y, b.x, b.y, c.x, c.y) === 0;
}

/** A whole degree from which every value in [min, max] is an exact difference (Frame). */
function origin(min: number, max: number): number {
  if (min >= 1) return Math.floor(min);
  if (max <= -1) return Math.ceil(max);
  return 0;
}

/**
 * Clipper2's overlay (clipper2-ts; Vatti's scan-beam algorithm, its orientation tests exact, in
 * BigInt once products outgrow doubles) on the inputs as integers (Frame): 30 times faster than
 * JTS on two fields and 30 to 300 times on large or intricate inputs. Its cost follows the
 * intersections it finds and how crowded the inputs are along its sweep, which overlay-plan.ts
 * counts before it runs.
 */
export const clipperEngine: OverlayEngine = {
  name: "clipper2",
  sweep: "beams",
  takesBridges: true,
  intersection: (a, b) => {
    const frame = Frame.around([a, b]);
    const subject = frame.paths(a);
    const clip = frame.paths(b);
    const clipper = new BoundedClipper64(pathsPositions(subject) + pathsPositions(clip));
    clipper.addSubject(subject);
    clipper.addClip(clip);
    return frame.polygons(execute(clipper, ClipType.Intersection));
  },
  union: (inputs) => {
    const frame = Frame.around(inputs);
    const subject = inputs.flatMap((polygons) => frame.paths(polygons));
    const clipper = new BoundedClipper64(pathsPositions(subject));
    clipper.addSubject(subject);
    return frame.polygons(execute(clipper, ClipType.Union));
  },
};

function pathsPositions(paths: Paths64): number {
  let positions = 0;
  for (const path of paths) positions += path.length;
  return positions;
}

/**
 * Clipper64 with its sweep bounded. Each scan-beam starts at a vertex latitude below the last one
 * (the sweep runs from the largest y down), so a sound sweep takes at most one beam per position.
 * On some inputs with near-coincident vertices clipper2-ts 2.0.1 instead turned back and swept the
 * same beams without end (a field against a clipped 20,000-position jurisdiction, transposed, spun
 * for minutes; test/geo/clipper-engine.test.ts); withoutCollinear now removes what led it there,
 * and this stays as the backstop. A sweep that turns back, or passes twice as many beams as
 * positions, is stopped and the overlay reported failed, so the next engine decides. The beams are
 * counted where the sweep records each one's bottom (`currentBotY`, which ClipperBase sets once a
 * beam), the one hook its TypeScript declarations leave open.
 */
export class BoundedClipper64 extends Clipper64 {
  #beams = 0;
  readonly #maxBeams: number;
  #bottom = 0;

  /**
   * The hook's accessors, made once and shared by every instance. Functions made per instance
   * (closures over the counters and `this`) made V8 keep each overlay's whole sweep through
   * scavenges until a full collection, as an object literal's getters did (docs/benchmarks.md,
   * "What a read keeps past a scavenge").
   */
  static readonly #beamCounter: PropertyDescriptor = {
    get(this: BoundedClipper64): number {
      return this.#bottom;
    },
    set(this: BoundedClipper64, y: number): void {
      // The sweep runs from the largest y down: a beam starting at a larger y than the last one
      // has turned back (the first set is the reset to 0, the second the first beam).
      if ((++this.#beams > 2 && y > this.#bottom) || this.#beams > this.#maxBeams) this.succeeded = false;
      this.#bottom = y;
    },
  };

  constructor(positions: number) {
    super();
    this.#maxBeams = 2 * positions + 16;
    // ClipperBase declares `currentBotY` as its own field: only a property on the instance replaces it.
    Object.defineProperty(this, "currentBotY", BoundedClipper64.#beamCounter);
  }
}

function execute(clipper: Clipper64, operation: ClipType): Paths64 {
  const solution: Paths64 = [];
  // Non-zero winding with exteriors one way round and holes the other (Frame.paths): overlapping
  // polygons of one input count once, and a hole is empty.
  if (!clipper.execute(operation, FillRule.NonZero, solution))
    throw new Error("Clipper2 could not complete the overlay");
  return solution;
}

interface PathBox {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

function pathBox(path: Path64): PathBox {
  const box = {
    minX: Number.POSITIVE_INFINITY,
    minY: Number.POSITIVE_INFINITY,
    maxX: Number.NEGATIVE_INFINITY,
    maxY: Number.NEGATIVE_INFINITY,
  };
  for (const { x, y } of path) {
    if (x < box.minX) box.minX = x;
    if (x > box.maxX) box.maxX = x;
    if (y < box.minY) box.minY = y;
    if (y > box.maxY) box.maxY = y;
  }
  return box;
}

function boxHolds(outer: PathBox, inner: PathBox): boolean {
  return outer.minX <= inner.minX && inner.maxX <= outer.maxX && outer.minY <= inner.minY && inner.maxY <= outer.maxY;
}

/** Whether `outer` holds `hole`: the first of its vertices not on `outer`'s boundary is inside it. */
function holds(outer: Path64, hole: Path64): boolean {
  for (const vertex of hole) {
    const found = Clipper.pointInPolygon(vertex, outer);
    if (found !== PointInPolygonResult.IsOn) return found === PointInPolygonResult.IsInside;
  }
  // Every vertex on the boundary: the hole runs along it, and only its owner has it so.
  return true;
}

/** Twice the signed (shoelace) area of a path; positive when counter-clockwise. */
function doubledArea(path: Path64): number {
  let sum = 0;
  for (let i = 0, j = path.length - 1; i < path.length; j = i++) {
    sum += (path[j].x - path[0].x) * (path[i].y - path[0].y) - (path[i].x - path[0].x) * (path[j].y - path[0].y);
  }
  return sum;
}
