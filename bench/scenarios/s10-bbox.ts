/**
 * S10 (issue 11): the `bbox` list filter over the large ledger, `GET /sources?bbox=<box>&limit=100`
 * with a different random 0.09° box per request (search-areas.ts: 81–100 sources each, so every
 * answer is one page). Targets: p50 < 5 ms and p99 < 20 ms at one connection; at 50 connections,
 * throughput within 2× of the plain list page of the same size (`GET /sources?limit=N`, N the
 * median result count of the boxes, measured before the runs), i.e. a ratio ≥ 0.5.
 */
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import { BOX_DEG, LARGE_BOX_DEG, randomBoxes } from "./search-areas.js";
import { countSummary, type Rounds, timedRounds } from "./sequential.js";
import type { Scenario } from "./types.js";

/** Boxes for the one-connection rounds and for the loads at 50 connections (different seeds). */
const ONE_CONNECTION_SEED = 1011;
const LOAD_SEED = 1012;
const LARGE_SEED = 1013;
const LOAD_BOXES = 20_000;
/** Requests before the runs that settle N (and warm the server up). */
const PREFLIGHT = 200;
const LIMIT = 100;

export interface BboxSetup {
  stored: number;
  /** The reference page's size: the median number of sources a box returned in the preflight. */
  pageLimit: number;
  preflightCounts: number[];
  loadPaths: string[];
  onePaths: string[];
}

const pathOf = (box: string) => `/sources?bbox=${box}&limit=${LIMIT}`;

/** The boxes, and N from a preflight of PREFLIGHT boxes on one connection. */
export async function prepare(plan: Plan, server: ServerProcess, token: string): Promise<BboxSetup> {
  const stored = plan.listLarge;
  const requests = PREFLIGHT + plan.oneConnection.bbox * (plan.runs + 1);
  const onePaths = randomBoxes(stored, requests, ONE_CONNECTION_SEED).map(pathOf);
  const preflight = await timedRounds({
    port: server.port,
    token,
    rounds: 1,
    perRound: PREFLIGHT,
    warmup: 0,
    // The preflight's boxes are the tail of the one-connection set, never measured there.
    requestAt: (i) => ({ method: "GET", path: onePaths[requests - 1 - i] }),
    what: "S10 preflight",
  });
  const pageLimit = countSummary(preflight.counts).median;
  log(`S10 preflight: ${countSummary(preflight.counts).text} sources per box; reference page limit=${pageLimit}`);
  return {
    stored,
    pageLimit,
    preflightCounts: preflight.counts,
    loadPaths: randomBoxes(stored, LOAD_BOXES, LOAD_SEED).map(pathOf),
    onePaths,
  };
}

export function scenarios(setup: BboxSetup): Scenario[] {
  return [
    {
      key: "S10-page",
      label: `GET /sources?limit=${setup.pageLimit} (${fmt(setup.stored)} stored)`,
      server: "search",
      load: { kind: "paths", paths: [`/sources?limit=${setup.pageLimit}`] },
      perRequest: 1,
    },
    {
      key: "S10-bbox",
      label: `GET /sources?bbox=<random ${BOX_DEG}° box>&limit=${LIMIT} (${fmt(setup.stored)} stored)`,
      server: "search",
      load: { kind: "paths", paths: setup.loadPaths },
      perRequest: 1,
    },
  ];
}

/** p50 and p99 at one connection, `plan.runs` rounds after a warm-up round. */
export function measureOneConnection(
  plan: Plan,
  server: ServerProcess,
  token: string,
  setup: BboxSetup,
): Promise<Rounds> {
  const perRound = plan.oneConnection.bbox;
  return timedRounds({
    port: server.port,
    token,
    rounds: plan.runs,
    perRound,
    warmup: perRound,
    requestAt: (i) => ({ method: "GET", path: setup.onePaths[i] }),
    what: "S10 bbox",
    onRound: (round, p50, p99) =>
      log(`S10 one connection, run ${round}: ${perRound} boxes, p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`),
  });
}

/**
 * Not in the targets: a 1° box (about 10,000 sources) asks for the first 100 of its many
 * matches, which the store answers by walking the list order (its "probing" plan). One round
 * of `plan.oneConnection.largeBox` requests, after 3 uncounted ones.
 */
export function measureLargeBoxes(plan: Plan, server: ServerProcess, token: string): Promise<Rounds> {
  const perRound = plan.oneConnection.largeBox;
  const paths = randomBoxes(plan.listLarge, perRound + 3, LARGE_SEED, LARGE_BOX_DEG).map(pathOf);
  return timedRounds({
    port: server.port,
    token,
    rounds: 1,
    perRound,
    warmup: 3,
    requestAt: (i) => ({ method: "GET", path: paths[i] }),
    what: "S10 large box",
    onRound: (_round, p50, p99) =>
      log(
        `S10 one connection, ${perRound} boxes of ${LARGE_BOX_DEG}°: p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
      ),
  });
}

export function rows(plan: Plan, m: Measurements, setup: BboxSetup, one: Rounds, large: Rounds): Row[] {
  const counts = countSummary(one.counts);
  const scenario = `S10 GET /sources?bbox=<random ${BOX_DEG}° box>&limit=${LIMIT}, ${fmt(setup.stored)} stored`;
  const truncated = one.truncated > 0 ? `, ${one.truncated} with a next page` : "";
  return [
    {
      id: "S10.p50",
      scenario: `${scenario}, one connection`,
      metric: "p50 latency",
      value: median(one.p50),
      unit: "ms",
      target: { on: "value", op: "<", threshold: 5 },
      profile: "S10-bbox",
      note: `${counts.text} sources${truncated}`,
    },
    {
      id: "S10.p99",
      scenario: `${scenario}, one connection`,
      metric: "p99 latency",
      value: median(one.p99),
      unit: "ms",
      target: { on: "value", op: "<", threshold: 20 },
      profile: "S10-bbox",
    },
    {
      id: "S10.ratio",
      scenario: `${scenario}, ${plan.connections} connections`,
      metric: `req/s vs GET /sources?limit=${setup.pageLimit}`,
      value: median(m.rps("S10-bbox")),
      unit: "req/s",
      baseline: median(m.rps("S10-page")),
      ratio: ratios(m.rps("S10-bbox"), m.rps("S10-page")),
      target: { on: "ratio", op: ">=", threshold: 0.5 },
      profile: "S10-bbox",
      errors: m.failed("S10-bbox") + m.failed("S10-page"),
      note: `p99 ${median(m.p99("S10-bbox")).toFixed(0)} vs ${median(m.p99("S10-page")).toFixed(0)} ms`,
    },
    {
      id: "S10.large",
      scenario: `S10 GET /sources?bbox=<random ${LARGE_BOX_DEG}° box>&limit=${LIMIT} (~10,000 match; no target), one connection`,
      metric: "p50 latency",
      value: median(large.p50),
      unit: "ms",
      note: `p99 ${median(large.p99).toFixed(0)} ms over ${large.counts.length} boxes; ${countSummary(large.counts).text} sources, ${large.truncated} with a next page`,
    },
  ];
}
