/**
 * S5 (issue 13): gRPC GetSource on its own server over S2's ledger, against S2's REST rate and p99,
 * with the frame-level client (bench/h2-frames.ts, as cheap to run as autocannon) advertising gzip
 * and without it (both targets); gRPC ListSources of the first 100, by a client with 1 MiB receive
 * windows, against the same page over REST on the same server (target). Informational: the list
 * with grpc-js's default 64 KiB windows, GetSource with node:http2's client (the measure of earlier
 * rounds) and with Connect's Node client.
 */
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

/** The page both S5 list loads ask for: ListSources{limit: 100} is the same query. */
const LIST_PAGE = "/sources?limit=100";
/**
 * The judged list client's receive windows: grpc-java's default (Netty's `flowControlWindow`);
 * grpc-go and gRPC's C core (Python's grpcio) grow theirs past it from the measured bandwidth-delay
 * product, and grpc-js users set `grpc-node.flow_control_window` (docs/api.md §9.7). grpc-js keeps
 * HTTP/2's 65,535 bytes otherwise: the informational S5-list-64k row.
 */
const LIST_WINDOW_BYTES = 1024 * 1024;

export function scenarios(plan: Plan, ids: string[]): Scenario[] {
  return [
    {
      key: "S5",
      label: `gRPC GetSource (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "frames", acceptCompression: true },
      perRequest: 1,
    },
    {
      key: "S5-identity",
      label: `gRPC GetSource, client not accepting gzip (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "frames", acceptCompression: false },
      perRequest: 1,
    },
    {
      key: "S5-list",
      label: `gRPC ListSources limit 100, client windows 1 MiB (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: {
        kind: "grpc",
        ids,
        client: "frames",
        acceptCompression: true,
        method: "list",
        windowBytes: LIST_WINDOW_BYTES,
      },
      perRequest: 1,
    },
    {
      key: "S5-list-64k",
      label: `gRPC ListSources limit 100, client windows 64 KiB as grpc-js's default (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "frames", acceptCompression: true, method: "list" },
      perRequest: 1,
    },
    {
      key: "S5-list-rest",
      label: `GET ${LIST_PAGE} on the same server (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "paths", paths: [LIST_PAGE] },
      perRequest: 1,
    },
    {
      key: "S5-h2",
      label: `gRPC GetSource, node:http2's client (${fmt(plan.get)} stored)`,
      server: "grpc",
      load: { kind: "grpc", ids, client: "h2", acceptCompression: true },
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

/**
 * The run order of `run` (1, 2, …): on even runs GetSource without gzip goes first. The two loads
 * take the same path (answers under 64 KiB are never compressed) and differ only in the header,
 * yet the one always run first on the S5 server read 10–45% lower in each of `0fb8b71`'s five
 * runs (the server idle meanwhile, then the previous run's garbage collected during it);
 * alternating the order, as S4 does for its before/after pairs, puts both first equally often.
 */
export function alternated(scenarios: Scenario[], run: number): Scenario[] {
  if (run % 2 === 1) return scenarios;
  const out = [...scenarios];
  const gzip = out.findIndex((s) => s.key === "S5");
  const identity = out.findIndex((s) => s.key === "S5-identity");
  if (gzip >= 0 && identity >= 0) [out[gzip], out[identity]] = [out[identity], out[gzip]];
  return out;
}

export function rows(m: Measurements): Row[] {
  const out: Row[] = [];
  for (const [key, what] of [
    ["S5", "calls/s vs S2 REST"],
    ["S5-identity", "calls/s vs S2 REST"],
  ] as const) {
    out.push(
      {
        id: `${key}.ratio`,
        scenario: `S5 ${m.label(key)}`,
        metric: what,
        value: median(m.rps(key)),
        unit: "req/s",
        baseline: median(m.rps("S2")),
        ratio: ratios(m.rps(key), m.rps("S2")),
        target: { on: "ratio", op: ">=", threshold: 1 },
        profile: key === "S5" ? "S5" : undefined,
        errors: m.failed(key),
      },
      {
        id: `${key}.p99`,
        scenario: `S5 ${m.label(key)}`,
        metric: "p99 latency vs S2 REST",
        value: median(m.p99(key)),
        unit: "ms",
        baseline: median(m.p99("S2")),
        ratio: ratios(m.p99(key), m.p99("S2")),
        target: { on: "ratio", op: "<=", threshold: 1 },
      },
    );
  }
  // Each gRPC load against its REST counterpart: judged where it has a target, for information otherwise.
  const against = (key: string, rest: "S2" | "S5-list-rest", judged: boolean, metric: string): Row => ({
    id: judged ? `${key}.ratio` : key,
    scenario: `S5 ${m.label(key)}`,
    metric,
    value: median(m.rps(key)),
    unit: "req/s",
    baseline: median(m.rps(rest)),
    ratio: ratios(m.rps(key), m.rps(rest)),
    ...(judged ? { target: { on: "ratio", op: ">=", threshold: 1 } as const } : {}),
    errors: m.failed(key) + (judged ? m.failed(rest) : 0),
    note: `p99 ${median(m.p99(key)).toFixed(1)} ms vs ${median(m.p99(rest)).toFixed(1)} ms`,
  });
  out.push(
    against("S5-list", "S5-list-rest", true, "calls/s vs the same page over REST"),
    against("S5-list-64k", "S5-list-rest", false, "calls/s vs the same page over REST"),
    against("S5-h2", "S2", false, "calls/s vs S2 REST"),
    against("S5-connect", "S2", false, "calls/s vs S2 REST"),
  );
  return out;
}
