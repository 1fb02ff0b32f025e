/**
 * S5: gRPC GetSource on its own server over S2's ledger, against S2's REST rate: the h2 client
 * advertising gzip (the target), then without it and with Connect's Node client (informational).
 */
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

export function scenarios(plan: Plan, ids: string[]): Scenario[] {
  return [
    {
      key: "S5",
      label: `gRPC GetSource (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "h2", acceptCompression: true },
      perRequest: 1,
    },
    {
      key: "S5-identity",
      label: `gRPC GetSource, client not accepting gzip (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "h2", acceptCompression: false },
      perRequest: 1,
    },
    {
      key: "S5-connect",
      label: `gRPC GetSource, Connect's Node client (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "connect", acceptCompression: true },
      perRequest: 1,
    },
  ];
}

export function rows(m: Measurements): Row[] {
  const out: Row[] = [
    {
      id: "S5.ratio",
      scenario: `S5 ${m.label("S5")}`,
      metric: "calls/s vs S2 REST",
      value: median(m.rps("S5")),
      unit: "req/s",
      baseline: median(m.rps("S2")),
      ratio: ratios(m.rps("S5"), m.rps("S2")),
      target: { on: "ratio", op: ">=", threshold: 1 },
      profile: "S5",
      errors: m.failed("S5"),
    },
    { id: "S5.p99", scenario: `S5 ${m.label("S5")}`, metric: "p99 latency", value: median(m.p99("S5")), unit: "ms" },
  ];
  for (const key of ["S5-identity", "S5-connect"]) {
    out.push({
      id: key,
      scenario: `S5 ${m.label(key)}`,
      metric: "calls/s vs S2 REST",
      value: median(m.rps(key)),
      unit: "req/s",
      baseline: median(m.rps("S2")),
      ratio: ratios(m.rps(key), m.rps("S2")),
      errors: m.failed(key),
      note: `p99 ${median(m.p99(key)).toFixed(1)} ms`,
    });
  }
  return out;
}
