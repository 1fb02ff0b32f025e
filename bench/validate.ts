/**
 * Scenario 6: OGC validity (src/geo/validity.ts `checkGeometry`, what the service runs on every
 * created geometry) of a 100,000-position MultiPolygon, in process, median of several runs after
 * one warm-up run.
 *
 * As a script it repeats the check for `seconds` (for `node --cpu-prof`):
 *   node --import tsx bench/validate.ts [seconds]
 */

import type { MultiPolygonGeometry } from "../src/geo/types.js";
import { checkGeometry } from "../src/geo/validity.js";
import { largeMultiPolygon } from "./geometry.js";

export interface ValidationShape {
  name: string;
  parts: number;
  positionsPerRing: number;
}

/** 1,000 field-sized circles of 100 positions (a farm's fields as one source), 100 of 1,000, 10,000 of 10. */
export const VALIDATION_SHAPES: ValidationShape[] = [
  { name: "1,000 polygons × 100 positions", parts: 1000, positionsPerRing: 100 },
  { name: "100 polygons × 1,000 positions", parts: 100, positionsPerRing: 1000 },
  { name: "10,000 polygons × 10 positions", parts: 10_000, positionsPerRing: 10 },
];

export interface ValidationResult {
  shape: string;
  positions: number;
  medianMs: number;
  minMs: number;
  maxMs: number;
  runsMs: number[];
  issues: number;
}

function positionsOf(g: MultiPolygonGeometry): number {
  return g.coordinates.reduce((n, polygon) => n + polygon.reduce((m, ring) => m + ring.length, 0), 0);
}

export function measureValidation(shape: ValidationShape, runs: number): ValidationResult {
  const geometry = largeMultiPolygon(shape.parts, shape.positionsPerRing);
  let issues = checkGeometry(geometry).length; // warm-up (JIT), not timed
  const runsMs: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = performance.now();
    issues = checkGeometry(geometry).length;
    runsMs.push(performance.now() - started);
  }
  const sorted = [...runsMs].sort((a, b) => a - b);
  return {
    shape: shape.name,
    positions: positionsOf(geometry),
    medianMs: sorted[Math.floor(sorted.length / 2)],
    minMs: sorted[0],
    maxMs: sorted[sorted.length - 1],
    runsMs,
    issues,
  };
}

const isMain = process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (isMain) {
  const seconds = Number(process.argv[2] ?? 5);
  const geometries = VALIDATION_SHAPES.map((shape) => largeMultiPolygon(shape.parts, shape.positionsPerRing));
  const until = performance.now() + seconds * 1000;
  let n = 0;
  while (performance.now() < until) {
    for (const geometry of geometries) checkGeometry(geometry);
    n++;
  }
  process.stdout.write(`${n} checks in ${seconds} s\n`);
}
