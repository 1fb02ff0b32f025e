/**
 * S13 (issue 10): `GET /sources?limit=100&as_of=<instant>` at 50 connections over the history
 * ledger (100,000 live; its events, conflicts and deletes), a different random instant per
 * request between the ledger's first full page and its last event, against the plain first page
 * `GET /sources?limit=100` on the same server, measured back to back. Target: the as_of list
 * within 2× of the plain one (req/s ratio ≥ 0.5).
 *
 * A preflight checks that as_of is applied (an instant 99.5 s after the first source lists fewer
 * than 100 sources) and that the random instants' pages are full.
 *
 * Informational (no target in the issue): `GET /sources/{id}?as_of=<instant>` of the live sources
 * at a random instant within a day after the ledger's last event (every one of them is live then),
 * against S12's `GET /sources/{id}` of the same sources.
 */
import type { ServerProcess } from "../proc.js";
import type { Row } from "../report.js";
import type { DatasetInfo, HistoryInfo } from "../seed.js";
import { shuffled } from "./load.js";
import { fmt, log } from "./log.js";
import { type Measurements, median, ratios } from "./rows.js";
import { countSummary, oneConnection, recordsOf } from "./sequential.js";
import type { Scenario } from "./types.js";

const LIMIT = 100;
const INSTANTS = 20_000;
const SEED = 1301;
const PREFLIGHT = 50;

export interface AsOfSetup {
  stored: number;
  paths: string[];
  /** GET /sources/{id}?as_of=… of live sources. */
  getPaths: string[];
  /** Records in the preflight's pages. */
  counts: number[];
}

const pathAt = (at: number) => `/sources?limit=${LIMIT}&as_of=${new Date(at).toISOString()}`;

export async function prepare(ledger: DatasetInfo, server: ServerProcess, token: string): Promise<AsOfSetup> {
  const history = ledger.history as HistoryInfo;
  let state = SEED;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  // Sources are created one second apart and 7 in 8 are the bench account's: from 3 × LIMIT
  // seconds on, the bench account's first page is full at every instant, as the plain page is.
  const from = history.firstAt + 3 * LIMIT * 1000;
  const span = history.lastAt - from;
  // Whole milliseconds anywhere in the span: most instants fall between two events.
  const paths = Array.from({ length: INSTANTS }, () => pathAt(from + Math.floor(random() * span)));
  const getPaths = shuffled([...history.conflicted, ...history.lone], 1302).map(
    (id) => `/sources/${id}?as_of=${new Date(history.lastAt + 1 + Math.floor(random() * 86_400_000)).toISOString()}`,
  );
  const connection = oneConnection(server.port, token);
  const counts: number[] = [];
  try {
    // One second apart, the first 100 sources: 99.5 s after the first, fewer are live.
    const early = recordsOf(await connection.send("GET", pathAt(history.firstAt + 99_500)), "S13 early as_of");
    if (early.length >= LIMIT) throw new Error(`S13: as_of 99.5 s after the first source listed ${early.length}`);
    for (const path of paths.slice(-PREFLIGHT))
      counts.push(recordsOf(await connection.send("GET", path), "S13").length);
  } finally {
    connection.close();
  }
  log(`S13 preflight: as_of pages of ${countSummary(counts).text} records`);
  return { stored: ledger.count, paths, getPaths, counts };
}

export function scenarios(setup: AsOfSetup): Scenario[] {
  return [
    {
      key: "S13-page",
      label: `GET /sources?limit=${LIMIT} (${fmt(setup.stored)} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: [`/sources?limit=${LIMIT}`] },
      perRequest: 1,
    },
    {
      key: "S13-as-of",
      label: `GET /sources?limit=${LIMIT}&as_of=<random instant> (${fmt(setup.stored)} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: setup.paths },
      perRequest: 1,
    },
    {
      key: "S13-get-as-of",
      label: `GET /sources/{id}?as_of=<instant after the last change> (${fmt(setup.stored)} stored, with conflicts)`,
      server: "history",
      load: { kind: "paths", paths: setup.getPaths },
      perRequest: 1,
    },
  ];
}

export function rows(m: Measurements, setup: AsOfSetup, connections: number): Row[] {
  return [
    {
      id: "S13.ratio",
      scenario: `S13 ${m.label("S13-as-of")}, ${connections} connections`,
      metric: `req/s vs GET /sources?limit=${LIMIT}`,
      value: median(m.rps("S13-as-of")),
      unit: "req/s",
      baseline: median(m.rps("S13-page")),
      ratio: ratios(m.rps("S13-as-of"), m.rps("S13-page")),
      target: { on: "ratio", op: ">=", threshold: 0.5 },
      profile: "S13-as-of",
      errors: m.failed("S13-as-of") + m.failed("S13-page"),
      note: `p99 ${median(m.p99("S13-as-of")).toFixed(0)} vs ${median(m.p99("S13-page")).toFixed(0)} ms; ${countSummary(setup.counts).text} records`,
    },
    {
      id: "S13.get",
      scenario: `S13 ${m.label("S13-get-as-of")}, ${connections} connections (no target)`,
      metric: "req/s vs S12's GET /sources/{id}",
      value: median(m.rps("S13-get-as-of")),
      unit: "req/s",
      baseline: median(m.rps("S12-get")),
      ratio: ratios(m.rps("S13-get-as-of"), m.rps("S12-get")),
      profile: "S13-get-as-of",
      errors: m.failed("S13-get-as-of"),
      note: `p99 ${median(m.p99("S13-get-as-of")).toFixed(0)} vs ${median(m.p99("S12-get")).toFixed(0)} ms`,
    },
  ];
}
