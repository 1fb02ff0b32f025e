/**
 * Experiment, not part of `npm run bench`: sources across a large boundary, in process (the
 * figures in docs/benchmarks.md, "Straddling a large boundary"). 1,000 fields of 0.01° spread
 * along a 99,000-position wavy ring; their protected-area overlaps with it as a cached reserve,
 * then their conflict checks against it as a new jurisdiction under one request's allowance
 * (as one create of 1,000 features would run them).
 *
 *   node --import tsx bench/experiments/straddling.ts [fields] [positions]
 */
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import { intersectionAreaM2, OverlayAllowance } from "../../src/geo/overlap.js";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import { computeUnepOverlap } from "../../src/protected-areas/overlap.js";

const fieldCount = Number(process.argv[2] ?? 1_000);
const positions = Number(process.argv[3] ?? 99_000);

/** The ring r = 1 + 0.2 sin(40 a): 40 waves, so a field across it meets a bent stretch of it. */
const radiusAt = (angle: number) => 1 + 0.2 * Math.sin(angle * 40);

function wavy(n: number): SourceGeometry {
  const ring: Position[] = [];
  for (let i = 0; i < n; i++) {
    const angle = (2 * Math.PI * i) / n;
    ring.push([radiusAt(angle) * Math.cos(angle), radiusAt(angle) * Math.sin(angle)]);
  }
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

const fields: SourceGeometry[] = Array.from({ length: fieldCount }, (_, i) => {
  const angle = (2 * Math.PI * (i + 0.37)) / fieldCount;
  const [x, y] = [radiusAt(angle) * Math.cos(angle), radiusAt(angle) * Math.sin(angle)];
  const ring: Position[] = [
    [x - 0.005, y - 0.005],
    [x + 0.005, y - 0.005],
    [x + 0.005, y + 0.005],
    [x - 0.005, y + 0.005],
    [x - 0.005, y - 0.005],
  ];
  return { type: "Polygon", coordinates: [ring] };
});

const reserve = wavy(positions);
const area = {
  id: "1",
  name: "reserve",
  designation: "National Park",
  iucnCategory: "II",
  geometry: reserve,
  bbox: boundingBox(reserve),
};
let started = performance.now();
let overlapping = 0;
for (const field of fields) {
  const subject = { geometry: field, bbox: boundingBox(field), areaM2: geodesicAreaM2(field) };
  if (computeUnepOverlap(subject, "WDPA", [area]).overlaps) overlapping++;
}
process.stdout.write(
  `protected-area overlaps of ${fieldCount} fields with a ${positions}-position reserve: ${(performance.now() - started).toFixed(0)} ms (${overlapping} overlap it)\n`,
);

const jurisdiction = wavy(positions);
const allowance = new OverlayAllowance();
let refused = 0;
started = performance.now();
for (const field of fields) {
  try {
    intersectionAreaM2(jurisdiction, field, undefined, allowance);
  } catch {
    refused++;
  }
}
process.stdout.write(
  `conflict checks of a new ${positions}-position jurisdiction against ${fieldCount} fields: ${(performance.now() - started).toFixed(0)} ms, ${refused} not attempted\n`,
);
