/**
 * Experiment, not part of `npm run bench`: what one full sandbox session costs in memory, and how
 * fast it reads back. Fills one session of the sandbox store, in-process, with 10,000 sources of
 * 100 positions (the bench's field-sized circles), in batches of 1,000 as the API takes them, and
 * reads `process.memoryUsage()` after full GCs before and after. Then times reads: `get` of every
 * source, and `list` pages of 100 rendered as the REST adapter renders them.
 *
 *   node --expose-gc --import tsx bench/experiments/sandbox-footprint.ts [--sources N] [--positions N]
 *
 * "accounted" is the store's own estimate of the bytes it holds (`bytesUsed()`), when it has one.
 */
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import type { PolygonGeometry } from "../../src/geo/types.js";
import { renderRecordsJson } from "../../src/http/rest-render.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { createSandboxStore } from "../../src/store/sandbox/index.js";
import { CREATE_REGION, cellCentre, circleRing } from "../geometry.js";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with node --expose-gc");

const option = (name: string, fallback: number): number => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
};
const SOURCES = option("sources", 10_000);
const POSITIONS = option("positions", 100);
const BATCH = 1_000;
const ACCOUNT = "acct-footprint";

/** Memory after full GCs, with turns of the event loop between them (ArrayBuffers are freed after). */
async function settle(): Promise<NodeJS.MemoryUsage> {
  for (let i = 0; i < 4; i++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage();
}

/** A fresh record as the ledger hands it over: its geometry as JSON.parse built it from a body. */
function record(k: number, createdAt: number): NewSourceRecord {
  const [cx, cy] = cellCentre(CREATE_REGION, k);
  const geometry = JSON.parse(
    JSON.stringify({ type: "Polygon", coordinates: [circleRing(cx, cy, 0.004, POSITIONS)] }),
  ) as PolygonGeometry;
  return {
    id: `sandbox_${randomUUID()}`,
    accountId: ACCOUNT,
    altId: `field-${k}`,
    methodology: "VM0042",
    tags: ["pilot"],
    stewardId: null,
    projectId: "project-3",
    outcomeReportingYear: 2025,
    sourceType: "FIELD",
    attributeType: ["CARBON_REMOVAL"],
    geometrySource: "CUSTODIAN_DRAWN",
    geometry,
    bbox: boundingBox(geometry),
    areaM2: geodesicAreaM2(geometry),
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
    createdBy: "Client acct-footprint",
    updatedBy: "Client acct-footprint",
    createdAt,
    updatedAt: createdAt,
    conflict: false,
    unepOverlap: null,
  };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

// Warm-up: the same work on a throwaway store, so that compiled code, feedback and the heap's own
// growth are in the baseline and not counted as the session's.
const warmUp = createSandboxStore({ ttlMs: 3_600_000 });
await warmUp.insertMany(Array.from({ length: Math.min(BATCH, SOURCES) }, (_, i) => record(SOURCES + i, 0)));
renderRecordsJson(await warmUp.list({ accountId: ACCOUNT, attributeTypes: [], limit: BATCH, offset: 0 }));
await warmUp.close();

/** Fills the session; a function of its own, so that no batch is left on the stack when measuring. */
async function fill(): Promise<number> {
  let ms = 0;
  for (let start = 0; start < SOURCES; start += BATCH) {
    const batch = Array.from({ length: Math.min(BATCH, SOURCES - start) }, (_, i) => record(start + i, start));
    const t0 = performance.now();
    await store.insertMany(batch);
    ms += performance.now() - t0;
  }
  return ms;
}

const store = createSandboxStore({ ttlMs: 3_600_000 });
const before = await settle();
const insertMs = await fill();
const after = await settle();

const heap = after.heapUsed - before.heapUsed;
const buffers = after.arrayBuffers - before.arrayBuffers;
const external = after.external - before.external;
const rss = after.rss - before.rss;
const accounted = (store as { bytesUsed?: () => number }).bytesUsed?.();
console.log(`${SOURCES} sources × ${POSITIONS} positions in one session (node ${process.version})`);
console.log(`  heapUsed      +${mb(heap)}`);
console.log(`  heapTotal     +${mb(after.heapTotal - before.heapTotal)} (V8's committed heap pages)`);
console.log(`  arrayBuffers  +${mb(buffers)}`);
console.log(`  external      +${mb(external)} (includes arrayBuffers)`);
console.log(`  heap+external +${mb(heap + external)}`);
console.log(`  rss           +${mb(rss)}`);
if (accounted !== undefined) console.log(`  accounted      ${mb(accounted)} (store's estimate)`);
console.log(`  insert        ${(insertMs / (SOURCES / BATCH)).toFixed(1)} ms per batch of ${BATCH}`);

const all = await store.list({ accountId: ACCOUNT, attributeTypes: [], limit: SOURCES, offset: 0 });
const ids = all.map((r) => r.id);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

const getRuns: number[] = [];
for (let run = 0; run < 5; run++) {
  const t0 = performance.now();
  let bytes = 0;
  for (const id of ids) {
    const got = await store.get(id, ACCOUNT);
    if (got !== null) bytes += renderRecordsJson([got]).length;
  }
  getRuns.push(((performance.now() - t0) * 1000) / ids.length);
  if (bytes === 0) throw new Error("nothing read");
}
console.log(`  get + render  ${median(getRuns).toFixed(1)} µs per source (median of 5 passes)`);

const listRuns: number[] = [];
for (let run = 0; run < 5; run++) {
  const t0 = performance.now();
  for (let offset = 0; offset < SOURCES; offset += 100) {
    const page = await store.list({ accountId: ACCOUNT, attributeTypes: [], limit: 100, offset });
    renderRecordsJson(page);
  }
  listRuns.push((performance.now() - t0) / (SOURCES / 100));
}
console.log(`  list + render ${median(listRuns).toFixed(2)} ms per page of 100 (median of 5 passes)`);

const geometryRuns: number[] = [];
for (let run = 0; run < 5; run++) {
  const t0 = performance.now();
  let positions = 0;
  for (const id of ids.slice(0, 2_000)) {
    const got = await store.get(id, ACCOUNT);
    positions += got?.geometry.coordinates[0].length ?? 0;
  }
  geometryRuns.push(((performance.now() - t0) * 1000) / 2_000);
  if (positions === 0) throw new Error("nothing read");
}
console.log(`  get .geometry ${median(geometryRuns).toFixed(1)} µs per source (the gRPC path's input)`);
await store.close();
