import type { SourceGeometry } from "./types.js";

// Issue paths index into g.coordinates, so a Polygon's paths start at the ring while a
// MultiPolygon's start at the polygon; the labels name the same element in words.

export function partPath(g: SourceGeometry, part: number): number[] {
  return g.type === "Polygon" ? [] : [part];
}

export function ringPath(g: SourceGeometry, part: number, ring: number): number[] {
  return [...partPath(g, part), ring];
}

export function positionPath(g: SourceGeometry, part: number, ring: number, position: number): number[] {
  return [...ringPath(g, part, ring), position];
}

/** "the polygon" or "polygon 2". */
export function partLabel(g: SourceGeometry, part: number): string {
  return g.type === "Polygon" ? "the polygon" : `polygon ${part}`;
}

/** "the exterior ring", "hole 1", "the exterior ring of polygon 2", "hole 1 of polygon 2"; hole k is ring k. */
export function ringLabel(g: SourceGeometry, part: number, ring: number): string {
  const name = ring === 0 ? "the exterior ring" : `hole ${ring}`;
  return g.type === "Polygon" ? name : `${name} of polygon ${part}`;
}

/** Input values exactly as given, so the user can find them in their data. */
export function formatPosition(x: number, y: number): string {
  return `(${x}, ${y})`;
}

/** A computed location (e.g. an intersection point), rounded to 1e-9° (~0.1 mm) to stay readable. */
export function formatLocation(x: number, y: number): string {
  return `(${roundForDisplay(x)}, ${roundForDisplay(y)})`;
}

function roundForDisplay(value: number): number {
  const rounded = Math.round(value * 1e9) / 1e9;
  return rounded === 0 ? 0 : rounded;
}
