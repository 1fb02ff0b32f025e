/**
 * Spatial-analysis issue, performance target: with N non-overlapping field-sized sources stored,
 * creating ONE 100-vertex source that has 3 real neighbours, in-process through the ledger service
 * (validation, conflict candidates from the R*Tree, exact overlay, both sides flagged, commit).
 * Target: median < 5 ms at 100,000 stored, and at most 1.5× the median at 1,000 stored.
 *
 *   node --import tsx bench/conflict-create.ts [--creates N] [--sizes 1000,100000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { conflictPolicy } from "../src/ledger/conflict.js";
import { productionIds } from "../src/ledger/ids.js";
import { createLedger } from "../src/ledger/ledger.js";
import type { Principal } from "../src/model/principal.js";
import { unepOverlapPolicy } from "../src/protected-areas/overlap.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { ellipseOverThree, GRID_COLUMNS, SEED_REGION } from "./geometry.js";
import { BENCH_ACCOUNT, seedLedger } from "./seed.js";

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : fallback;
}

const creates = Number(option("creates", "200"));
const sizes = option("sizes", "1000,100000").split(",").map(Number);

const principal: Principal = {
  subject: "bench",
  accountId: "acct-other",
  role: "user",
  isAdmin: false,
  scopes: new Set(["write:sources"]),
  actor: "Bench",
  expiresAt: Math.floor(Date.now() / 1000) + 3600,
};

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function measure(
  size: number,
  dir: string,
): Promise<{ size: number; median: number; p90: number; flagged: number }> {
  const path = join(dir, `ledger-${size}.sqlite`);
  await seedLedger(path, size);
  const store = openSqliteStore({ path, conflictPolicy, protectedAreaPolicy: unepOverlapPolicy });
  const ledger = createLedger({
    environment: "production",
    store,
    newId: productionIds(),
    secret: await store.ledgerSecret(),
  });
  const times: number[] = [];
  let flagged = 0;
  // Cells k, k+1, k+2 in one row, spread over the ledger; each triple is used once.
  const rows = Math.max(1, Math.floor(size / GRID_COLUMNS));
  const perRow = Math.floor((GRID_COLUMNS - 2) / 3);
  for (let i = 0; i < creates + 20; i++) {
    const row = (i * 7919) % rows;
    const k = row * GRID_COLUMNS + 3 * (Math.floor(i / rows) % perRow);
    const draft = {
      altId: `bench-${size}-${i}`,
      methodology: null,
      tags: [],
      stewardId: null,
      projectId: null,
      outcomeReportingYear: null,
      sourceType: null,
      attributeType: [],
      geometrySource: null,
      geometry: ellipseOverThree(SEED_REGION, k),
      startAt: Date.UTC(2024, 0, 1),
      endAt: Date.UTC(2025, 0, 1),
    };
    const started = performance.now();
    const [source] = await ledger.create(principal, { sources: [draft] });
    const elapsed = performance.now() - started;
    if (source?.conflict) flagged++;
    // The first 20 warm up the JIT and caches.
    if (i >= 20) times.push(elapsed);
  }
  await store.close();
  return { size, median: median(times), p90: times.sort((a, b) => a - b)[Math.floor(times.length * 0.9)], flagged };
}

const dir = mkdtempSync(join(tmpdir(), "ledger-conflict-bench-"));
try {
  const results = [];
  for (const size of sizes) {
    const result = await measure(size, dir);
    results.push(result);
    console.log(
      `${size.toLocaleString("en-US")} stored: median ${result.median.toFixed(2)} ms, p90 ${result.p90.toFixed(2)} ms, ` +
        `${result.flagged} of ${creates + 20} creates flagged as conflicting (each has 3 real neighbours in ${BENCH_ACCOUNT})`,
    );
  }
  const first = results[0];
  const last = results[results.length - 1];
  console.log(
    `growth ${first.size.toLocaleString("en-US")} → ${last.size.toLocaleString("en-US")}: ${(last.median / first.median).toFixed(2)}× ` +
      `(target ≤ 1.5×); median at ${last.size.toLocaleString("en-US")}: ${last.median.toFixed(2)} ms (target < 5 ms)`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
