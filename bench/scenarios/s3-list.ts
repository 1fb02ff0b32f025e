/** S3: the first page of GET /sources?source_type=FIELD&limit=100, on a small and a large ledger, against B100. */
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

export function scenarios(plan: Plan): Scenario[] {
  return [
    {
      key: "S3-small",
      label: `GET /sources?source_type=FIELD&limit=100 (${fmt(plan.listSmall)} stored)`,
      server: "list-small",
      load: { kind: "list" },
      perRequest: 1,
    },
    {
      key: "S3-large",
      label: `GET /sources?source_type=FIELD&limit=100 (${fmt(plan.listLarge)} stored)`,
      server: "list-large",
      load: { kind: "list" },
      perRequest: 1,
    },
  ];
}

export function rows(plan: Plan, m: Measurements): Row[] {
  const out: Row[] = [];
  for (const size of ["small", "large"] as const) {
    const key = `S3-${size}`;
    out.push(
      {
        id: `${key}.ratio`,
        scenario: `S3 ${m.label(key)}`,
        metric: "req/s vs baseline",
        value: median(m.rps(key)),
        unit: "req/s",
        baseline: median(m.rps("B100")),
        ratio: ratios(m.rps(key), m.rps("B100")),
        target: { on: "ratio", op: ">=", threshold: 0.4 },
        profile: key,
        errors: m.failed(key),
      },
      {
        id: `${key}.p99`,
        scenario: `S3 ${m.label(key)}`,
        metric: "p99 latency",
        value: median(m.p99(key)),
        unit: "ms",
        target: size === "large" ? { on: "value", op: "<", threshold: 20 } : undefined,
        profile: key,
      },
    );
  }
  out.push({
    id: "S3.growth",
    scenario: `S3 cost ${fmt(plan.listLarge)} vs ${fmt(plan.listSmall)} stored`,
    metric: "time per request ratio",
    value: ratios(m.rps("S3-small"), m.rps("S3-large")),
    unit: "×",
    target: { on: "value", op: "<=", threshold: 1.5 },
    profile: "S3-large",
    note: `p50 ratio ${median(m.p50("S3-large").map((x, i) => x / Math.max(1e-9, m.p50("S3-small")[i]))).toFixed(2)}×`,
  });
  return out;
}
