/**
 * S4: POST /sources of GeoJSON FeatureCollections of 1 or 100 new features, each into a copy of a
 * small and a large ledger; what a load created is deleted after it, so every load writes into a
 * ledger of the planned size.
 */
import Database from "better-sqlite3";
import { CREATE_REGION, cellPolygon } from "../geometry.js";
import type { Row } from "../report.js";
import { BENCH_ACCOUNT } from "../seed.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

let nextCell = 0;
/** One feature per call: a new alt_id and a new cell of the create region, never overlapping anything. */
function featureJson(): string {
  const cell = nextCell++;
  return JSON.stringify({
    type: "Feature",
    id: `load-${cell}`,
    properties: {
      start_at: "2024-01-01T00:00:00Z",
      end_at: "2025-01-01T00:00:00Z",
      source_type: "FIELD",
      attribute_type: ["CARBON_REMOVAL"],
      methodology: "VM0042",
      steward_id: `grower-${cell % 500}`,
      project_id: "prj-load",
      tags: ["bench"],
    },
    geometry: cellPolygon(CREATE_REGION, cell),
  });
}
export const createBody = (features: number) =>
  `{"type":"FeatureCollection","features":[${Array.from({ length: features }, featureJson).join(",")}]}`;

/** Deletes what scenario 4 created, so every run writes into a ledger of the planned size. */
export function removeCreatedSources(path: string): number {
  // Plain SQL on the store's tables: the attribute rows go by ON DELETE CASCADE, the R*Tree
  // entries by the store's delete trigger. No source of the seed is touched.
  const db = new Database(path);
  try {
    db.pragma("busy_timeout = 10000");
    db.pragma("foreign_keys = ON");
    return db.prepare("DELETE FROM sources WHERE account_id = ? AND alt_id LIKE 'load-%'").run(BENCH_ACCOUNT).changes;
  } finally {
    db.close();
  }
}

/** Single features, then batches, each on the small then the large ledger (`files`: each server's ledger copy). */
export function scenarios(plan: Plan, files: Map<string, string>): Scenario[] {
  return ([1, 100] as const).flatMap((features) =>
    (["small", "large"] as const).map(
      (size): Scenario => ({
        key: `S4-${features === 1 ? "single" : "batch"}-${size}`,
        label: `POST /sources, ${features === 1 ? "1 feature" : "100 features"} (${fmt(size === "small" ? plan.postSmall : plan.postLarge)} stored)`,
        server: `create-${size}`,
        load: { kind: "create", features },
        perRequest: features,
        cleans: files.get(`create-${size}`),
      }),
    ),
  );
}

export function rows(plan: Plan, m: Measurements): Row[] {
  return [...batchRows(plan, m), ...singleRows(plan, m)];
}

function batchRows(plan: Plan, m: Measurements): Row[] {
  return [
    {
      id: "S4.batch",
      scenario: `S4 ${m.label("S4-batch-large")}`,
      metric: "sources/s",
      value: median(m.rps("S4-batch-large")),
      unit: "sources/s",
      target: { on: "value", op: ">=", threshold: 3000 },
      profile: "S4-batch-large",
      errors: m.failed("S4-batch-large"),
    },
    {
      id: "S4.batch.p99",
      scenario: `S4 ${m.label("S4-batch-large")}`,
      metric: "p99 latency",
      value: median(m.p99("S4-batch-large")),
      unit: "ms",
    },
    {
      id: "S4.batch.small",
      scenario: `S4 ${m.label("S4-batch-small")}`,
      metric: "sources/s",
      value: median(m.rps("S4-batch-small")),
      unit: "sources/s",
      errors: m.failed("S4-batch-small"),
    },
    {
      id: "S4.batch.degradation",
      scenario: `S4 batches: ${fmt(plan.postSmall)} → ${fmt(plan.postLarge)} stored`,
      metric: "throughput drop",
      value: ratios(m.rps("S4-batch-small"), m.rps("S4-batch-large")),
      unit: "×",
      target: { on: "value", op: "<=", threshold: 1.5 },
      profile: "S4-batch-large",
    },
  ];
}

function singleRows(plan: Plan, m: Measurements): Row[] {
  return [
    {
      id: "S4.single.p99",
      scenario: `S4 ${m.label("S4-single-large")}`,
      metric: "p99 latency",
      value: median(m.p99("S4-single-large")),
      unit: "ms",
      target: { on: "value", op: "<", threshold: 15 },
      profile: "S4-single-large",
      errors: m.failed("S4-single-large"),
    },
    {
      id: "S4.single",
      scenario: `S4 ${m.label("S4-single-large")}`,
      metric: "sources/s",
      value: median(m.rps("S4-single-large")),
      unit: "sources/s",
    },
    {
      id: "S4.single.small.p99",
      scenario: `S4 ${m.label("S4-single-small")}`,
      metric: "p99 latency",
      value: median(m.p99("S4-single-small")),
      unit: "ms",
      errors: m.failed("S4-single-small"),
    },
    {
      id: "S4.single.degradation",
      scenario: `S4 single feature: ${fmt(plan.postSmall)} → ${fmt(plan.postLarge)} stored`,
      metric: "p99 growth",
      value: ratios(
        m.p99("S4-single-large"),
        m.p99("S4-single-small").map((x) => Math.max(1, x)),
      ),
      unit: "×",
      target: { on: "value", op: "<=", threshold: 1.5 },
      profile: "S4-single-large",
      note: `throughput drop ${ratios(m.rps("S4-single-small"), m.rps("S4-single-large")).toFixed(2)}×`,
    },
  ];
}
