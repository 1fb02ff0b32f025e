/**
 * S12 (issue 10): `GET /sources/{id}/history` and `GET /sources/{id}/conflicts` at 50 connections
 * over the history ledger (seed.ts, seedHistoryLedger: every source of a triple has 1–3 conflicts,
 * half of the counterparts in another account, so they are refs; some sources deleted, some
 * alone), a different source per request in a random order, on a server process of its own
 * (`history`). Target: p99 < 10 ms for each. For scale, the same server's `GET /sources/{id}` of
 * the same live sources (S2's request) is measured with them.
 *
 * A preflight on one connection checks that every kind of source answers 200 and counts what the
 * answers hold (events, conflicts, refs).
 *
 * At 50 connections each sending its next request as soon as the last one answers, the server is
 * always saturated and the latency is the queue the load builds (50 / rate): it measures throughput
 * twice. So the three loads also run open-loop (no target): at a fixed rate, a quarter of what the
 * same server's GET /sources/{id} served at saturation in this run, over 50 connections, each
 * request timed from when it was due (bench/paced-load.ts).
 */
import { type PacedResult, runPacedLoad } from "../paced-load.js";
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import type { DatasetInfo, HistoryInfo } from "../seed.js";
import { shuffled } from "./load.js";
import { fmt, log } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median } from "./rows.js";
import { countSummary, oneConnection, type Rounds, timedRounds } from "./sequential.js";
import type { Scenario } from "./types.js";

const PREFLIGHT = 200;

export interface HistorySetup {
  stored: number;
  historyPaths: string[];
  conflictPaths: string[];
  getPaths: string[];
  /** Per preflight answer: events in a history, conflicts in a conflicts answer. */
  events: number[];
  conflicts: number[];
  /** Preflight answers naming a counterpart by its ref (another account's). */
  refs: { history: number; conflicts: number };
  bytes: { history: number; conflicts: number };
  info: Omit<HistoryInfo, "conflicted" | "deleted" | "lone">;
}

/** The paths of the loads (a random order over every kind), checked and counted on one connection. */
export async function prepare(ledger: DatasetInfo, server: ServerProcess, token: string): Promise<HistorySetup> {
  const history = ledger.history as HistoryInfo;
  const live = shuffled([...history.conflicted, ...history.lone], 1201);
  const historyPaths = shuffled([...history.conflicted, ...history.deleted, ...history.lone], 1202).map(
    (id) => `/sources/${id}/history`,
  );
  const conflictPaths = live.map((id) => `/sources/${id}/conflicts`);
  const getPaths = shuffled(live, 1203).map((id) => `/sources/${id}`);
  const { conflicted: _c, deleted: _d, lone: _l, ...info } = history;
  const setup: HistorySetup = {
    stored: ledger.count,
    historyPaths,
    conflictPaths,
    getPaths,
    events: [],
    conflicts: [],
    refs: { history: 0, conflicts: 0 },
    bytes: { history: 0, conflicts: 0 },
    info,
  };
  const connection = oneConnection(server.port, token);
  try {
    // The deleted sources first: their history must answer although GET does not.
    const paths = [...history.deleted.slice(0, 10).map((id) => `/sources/${id}/history`), ...historyPaths];
    for (const path of paths.slice(0, PREFLIGHT)) {
      const answer = await connection.send("GET", path);
      if (answer.status !== 200) throw new Error(`S12 ${path} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      const events = JSON.parse(answer.body) as { counterpart?: { ref?: string } }[];
      setup.events.push(events.length);
      if (events.some((e) => e.counterpart?.ref !== undefined)) setup.refs.history += 1;
      setup.bytes.history += answer.bytes;
    }
    for (const path of conflictPaths.slice(0, PREFLIGHT)) {
      const answer = await connection.send("GET", path);
      if (answer.status !== 200) throw new Error(`S12 ${path} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
      const conflicts = JSON.parse(answer.body) as { counterpart: { ref?: string } }[];
      setup.conflicts.push(conflicts.length);
      if (conflicts.some((c) => c.counterpart.ref !== undefined)) setup.refs.conflicts += 1;
      setup.bytes.conflicts += answer.bytes;
    }
  } finally {
    connection.close();
  }
  setup.bytes.history = Math.round(setup.bytes.history / setup.events.length);
  setup.bytes.conflicts = Math.round(setup.bytes.conflicts / setup.conflicts.length);
  log(
    `S12 preflight: histories of ${countSummary(setup.events).text} events (${setup.refs.history} of ${setup.events.length} with a ref), conflicts ${countSummary(setup.conflicts).text} (${setup.refs.conflicts} with a ref)`,
  );
  return setup;
}

/** Seconds of each open-loop load. */
const PACED_SECONDS = 5;
/** The open-loop rate, as a share of the saturated GET /sources/{id} rate of the same server. */
const PACED_SHARE = 0.25;

export type PacedKind = "get" | "history" | "conflicts";
export interface Paced {
  rate: number;
  runs: Record<PacedKind, PacedResult[]>;
}

/**
 * GET, history and conflicts open-loop at a quarter of `getRps` (S12-get's saturated median),
 * `plan.runs` times, the order alternating, on the history server alone (the loads are done).
 */
export async function measurePaced(
  plan: Plan,
  server: ServerProcess,
  token: string,
  setup: HistorySetup,
  getRps: number,
): Promise<Paced> {
  const rate = Math.max(1, Math.round((getRps * PACED_SHARE) / 10) * 10);
  const paths: Record<PacedKind, string[]> = {
    get: setup.getPaths,
    history: setup.historyPaths,
    conflicts: setup.conflictPaths,
  };
  const kinds: PacedKind[] = ["get", "history", "conflicts"];
  const runs: Record<PacedKind, PacedResult[]> = { get: [], history: [], conflicts: [] };
  // A second of each first, from the end of its list: connections opened, code warm.
  for (const kind of kinds) {
    const list = paths[kind];
    await runPacedLoad({
      port: server.port,
      token,
      rate,
      connections: plan.connections,
      duration: 1,
      pathAt: (i) => list[list.length - 1 - (i % list.length)],
    });
  }
  for (let run = 1; run <= plan.runs; run++) {
    for (const kind of run % 2 === 1 ? kinds : [...kinds].reverse()) {
      const list = paths[kind];
      const result = await runPacedLoad({
        port: server.port,
        token,
        rate,
        connections: plan.connections,
        duration: PACED_SECONDS,
        // Another stretch of the shuffled list each run.
        pathAt: (i) => list[(i + run * rate * PACED_SECONDS) % list.length],
      });
      runs[kind].push(result);
      log(
        `S12 ${kind} open-loop at ${fmt(rate)}/s, run ${run}: ${fmt(Math.round(result.rps))} answered/s, p50 ${result.p50.toFixed(2)} ms, p99 ${result.p99.toFixed(2)} ms, max ${result.max.toFixed(1)} ms, sent late by p99 ${result.sendLagP99.toFixed(2)} ms, ${result.failed} failed`,
      );
    }
  }
  return { rate, runs };
}

export function scenarios(setup: HistorySetup): Scenario[] {
  const stored = fmt(setup.stored);
  return [
    {
      key: "S12-get",
      label: `GET /sources/{id} of the same sources (${stored} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: setup.getPaths },
      perRequest: 1,
    },
    {
      key: "S12-history",
      label: `GET /sources/{id}/history (${stored} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: setup.historyPaths },
      perRequest: 1,
    },
    {
      key: "S12-conflicts",
      label: `GET /sources/{id}/conflicts (${stored} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: setup.conflictPaths },
      perRequest: 1,
    },
  ];
}

/** History and conflicts at one connection, one request at a time (no queueing): what a request costs. */
export async function measureOneConnection(
  plan: Plan,
  server: ServerProcess,
  token: string,
  setup: HistorySetup,
): Promise<{ history: Rounds; conflicts: Rounds }> {
  const perRound = plan.oneConnection.bbox;
  const rounds = (paths: string[], what: string) =>
    timedRounds({
      port: server.port,
      token,
      rounds: plan.runs,
      perRound,
      warmup: Math.min(perRound, 100),
      // From the end of the list: other sources than the loads start with.
      requestAt: (i) => ({ method: "GET", path: paths[paths.length - 1 - (i % paths.length)] }),
      what,
      onRound: (round, p50, p99) =>
        log(`${what} one connection, run ${round}: p50 ${p50.toFixed(2)} ms, p99 ${p99.toFixed(2)} ms`),
    });
  return {
    history: await rounds(setup.historyPaths, "S12 history"),
    conflicts: await rounds(setup.conflictPaths, "S12 conflicts"),
  };
}

export function rows(
  m: Measurements,
  setup: HistorySetup,
  one: { history: Rounds; conflicts: Rounds },
  paced: Paced,
  connections: number,
): Row[] {
  const judged = (key: "S12-history" | "S12-conflicts", what: string): Row => ({
    id: `${key}.p99`,
    scenario: `S12 ${m.label(key)}, ${connections} connections`,
    metric: "p99 latency",
    value: median(m.p99(key)),
    unit: "ms",
    target: { on: "value", op: "<", threshold: 10 },
    profile: key,
    errors: m.failed(key),
    note: `${fmt(Math.round(median(m.rps(key))))} req/s, p50 ${median(m.p50(key)).toFixed(0)} ms; ${what}`,
  });
  const { eventsPerSource } = setup.info;
  return [
    judged(
      "S12-history",
      `${countSummary(setup.events).text} events, ~${fmt(setup.bytes.history)} B; ${fmt(setup.info.events)} events stored, ${eventsPerSource.min}–${eventsPerSource.max} a source`,
    ),
    judged(
      "S12-conflicts",
      `${countSummary(setup.conflicts).text} conflicts, ${Math.round((100 * setup.refs.conflicts) / setup.conflicts.length)}% with a ref, ~${fmt(setup.bytes.conflicts)} B; ${fmt(setup.info.pairs)} pairs stored`,
    ),
    ...(["history", "conflicts"] as const).map(
      (what): Row => ({
        id: `S12-${what}.one`,
        scenario: `S12 GET /sources/{id}/${what}, one connection, one request at a time (no target)`,
        metric: "p99 latency",
        value: median(one[what].p99),
        unit: "ms",
        note: `p50 ${median(one[what].p50).toFixed(2)} ms over ${fmt(one[what].counts.length)} requests`,
      }),
    ),
    ...(["history", "conflicts", "get"] as const).map((kind): Row => {
      const runs = paced.runs[kind];
      return {
        id: `S12-${kind}.paced`,
        scenario: `S12 GET /sources/{id}${kind === "get" ? "" : `/${kind}`} open-loop at ${fmt(paced.rate)} req/s (a quarter of S12's GET rate), up to ${connections} connections (no target)`,
        metric: "p99 latency",
        value: median(runs.map((r) => r.p99)),
        unit: "ms",
        errors: runs.reduce((sum, r) => sum + r.failed, 0),
        note: `p50 ${median(runs.map((r) => r.p50)).toFixed(2)} ms, worst ${Math.max(...runs.map((r) => r.max)).toFixed(0)} ms; p99 per run ${runs.map((r) => r.p99.toFixed(1)).join(", ")}; answered ${fmt(Math.round(median(runs.map((r) => r.rps))))}/s; the bench sent late by p99 ${median(runs.map((r) => r.sendLagP99)).toFixed(1)} ms`,
      };
    }),
    {
      id: "S12-get.p99",
      scenario: `S12 reference: ${m.label("S12-get")}, ${connections} connections (no target)`,
      metric: "p99 latency",
      value: median(m.p99("S12-get")),
      unit: "ms",
      errors: m.failed("S12-get"),
      note: `${fmt(Math.round(median(m.rps("S12-get"))))} req/s, p50 ${median(m.p50("S12-get")).toFixed(0)} ms`,
    },
  ];
}
