/**
 * S11 (issue 11): `POST /sources/search` with a 1,000-vertex polygon over the large ledger, a
 * different random star-shaped polygon per request (search-areas.ts), `limit: 100`. Target: p50
 * < 20 ms at one connection. At 50 connections its throughput is shown against S10's page of
 * the same size (no target).
 */
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import { POLYGON_POSITIONS, POLYGON_RADIUS_DEG, randomPolygonBodies } from "./search-areas.js";
import { countSummary, type Rounds, timedRounds } from "./sequential.js";
import type { Scenario } from "./types.js";

const ONE_CONNECTION_SEED = 1111;
const LOAD_SEED = 1112;
const LOAD_POLYGONS = 2_000;

export interface PolygonSetup {
  stored: number;
  loadBodies: string[];
  oneBodies: string[];
  bodyBytes: number;
}

export function prepare(plan: Plan): PolygonSetup {
  const stored = plan.listLarge;
  const oneBodies = randomPolygonBodies(stored, plan.oneConnection.polygon * (plan.runs + 1), ONE_CONNECTION_SEED);
  return {
    stored,
    oneBodies,
    loadBodies: randomPolygonBodies(stored, LOAD_POLYGONS, LOAD_SEED),
    bodyBytes: Math.round(oneBodies.reduce((n, b) => n + b.length, 0) / oneBodies.length),
  };
}

const label = (stored: number) =>
  `POST /sources/search, random ${fmt(POLYGON_POSITIONS)}-vertex polygon (~${POLYGON_RADIUS_DEG}°), limit 100, ${fmt(stored)} stored`;

export function scenarios(setup: PolygonSetup): Scenario[] {
  return [
    {
      key: "S11-polygon",
      label: label(setup.stored),
      server: "search",
      load: { kind: "search", bodies: setup.loadBodies },
      perRequest: 1,
    },
  ];
}

export function measureOneConnection(
  plan: Plan,
  server: ServerProcess,
  token: string,
  setup: PolygonSetup,
): Promise<Rounds> {
  const perRound = plan.oneConnection.polygon;
  return timedRounds({
    port: server.port,
    token,
    rounds: plan.runs,
    perRound,
    warmup: perRound,
    requestAt: (i) => ({ method: "POST", path: "/sources/search", body: setup.oneBodies[i] }),
    what: "S11 polygon search",
    onRound: (round, p50, p99) =>
      log(`S11 one connection, run ${round}: ${perRound} polygons, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`),
  });
}

export function rows(plan: Plan, m: Measurements, setup: PolygonSetup, one: Rounds): Row[] {
  const counts = countSummary(one.counts);
  const truncated = one.truncated > 0 ? `, ${one.truncated} of ${one.counts.length} with a next page` : "";
  return [
    {
      id: "S11.p50",
      scenario: `S11 ${label(setup.stored)}, one connection`,
      metric: "p50 latency",
      value: median(one.p50),
      unit: "ms",
      target: { on: "value", op: "<", threshold: 20 },
      profile: "S11-polygon",
      note: `${counts.text} sources${truncated}; body ~${fmt(setup.bodyBytes)} B`,
    },
    {
      id: "S11.p99",
      scenario: `S11 ${label(setup.stored)}, one connection`,
      metric: "p99 latency",
      value: median(one.p99),
      unit: "ms",
    },
    {
      id: "S11.rps",
      scenario: `S11 ${label(setup.stored)}, ${plan.connections} connections`,
      metric: `req/s vs ${m.label("S10-page").split(" (")[0]}`,
      value: median(m.rps("S11-polygon")),
      unit: "req/s",
      baseline: median(m.rps("S10-page")),
      ratio: ratios(m.rps("S11-polygon"), m.rps("S10-page")),
      errors: m.failed("S11-polygon"),
      note: `p99 ${median(m.p99("S11-polygon")).toFixed(0)} ms`,
    },
  ];
}
