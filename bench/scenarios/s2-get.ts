/** S2: GET /sources/{id}, ids spread over the whole ledger in random order, against B1. */
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

export function scenario(plan: Plan, ids: string[]): Scenario {
  return {
    key: "S2",
    label: `GET /sources/{id} (${fmt(plan.get)} stored)`,
    server: "get",
    load: { kind: "get", ids },
    perRequest: 1,
  };
}

export function rows(m: Measurements): Row[] {
  return [
    {
      id: "S2.ratio",
      scenario: `S2 ${m.label("S2")}`,
      metric: "req/s vs baseline",
      value: median(m.rps("S2")),
      unit: "req/s",
      baseline: median(m.rps("B1")),
      ratio: ratios(m.rps("S2"), m.rps("B1")),
      target: { on: "ratio", op: ">=", threshold: 0.5 },
      profile: "S2",
      errors: m.failed("S2"),
    },
    {
      id: "S2.p99",
      scenario: `S2 ${m.label("S2")}`,
      metric: "p99 latency",
      value: median(m.p99("S2")),
      unit: "ms",
      target: { on: "value", op: "<", threshold: 10 },
      profile: "S2",
    },
  ];
}
