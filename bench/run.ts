/**
 * `npm run bench` (full: median of 3 runs, about 12 minutes here; about 6 more the first time
 * after a store change, while the ledgers are built) and `npm run bench -- --quick` (smaller
 * ledgers, one run, about 3 minutes).
 *
 * Every scenario runs against a real server process: bench/server.ts, compiled with tsc as the
 * container image runs the service, builds the app exactly like src/main.ts (one port, HTTP/1.1 + h2c) over an embedded store file loaded beforehand through
 * the store (bench/seed.ts), with AUTH_ISSUER pointing at this process's JWKS and real RS256
 * tokens. HTTP load comes from autocannon in this process, gRPC load from Connect's gRPC
 * transport over h2c (bench/grpc-load.ts), both with 50 connections / calls in flight.
 *
 * Options:
 *   --quick            small ledgers, one run, short loads
 *   --runs N           repetitions (default 3, quick 1); values are medians, ratios medians of per-run ratios
 *   --duration S       seconds per measured load (default 3, quick 2)
 *   --batch-connections N   connections for the batches of 100 (default 10: 1,000 sources in flight)
 *   --no-profile       skip the CPU profiles of missed targets (quick mode skips them unless --profile)
 *   --profile-all      profile every server scenario, missed or not
 *   --fresh            rebuild the cached ledgers
 *   --no-docs          do not rewrite docs/benchmarks.md (quick mode never does)
 *   --alg ES256        sign ES256 tokens instead of RS256
 *   --before COMMIT    also run every S4 load on the code of COMMIT (issue 10: 7ecac0d, main before
 *                      it), back to back with this code's, alternating which goes first
 *                      (bench/scenarios/before.ts); judged rows: within 10% of it
 */
import { mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir, totalmem } from "node:os";
import { basename, join } from "node:path";
import type { ProfileSummary } from "./cpuprofile.js";
import { compileServers, type ServerProcess } from "./proc.js";
import { type Row, writeReport } from "./report.js";
import { type BeforeCode, prepareBefore } from "./scenarios/before.js";
import { startFleet } from "./scenarios/fleet.js";
import { runInterleaved } from "./scenarios/interleave.js";
import { type Ledgers, prepareLedgers } from "./scenarios/ledgers.js";
import { shuffled } from "./scenarios/load.js";
import { elapsed, log, startClock } from "./scenarios/log.js";
import { planFor } from "./scenarios/options.js";
import { PROFILE_DIR, profileScenarios } from "./scenarios/profiles.js";
import { judged, measurements, median, rawRuns } from "./scenarios/rows.js";
import * as s1 from "./scenarios/s1-baselines.js";
import * as s2 from "./scenarios/s2-get.js";
import * as s3 from "./scenarios/s3-list.js";
import * as s4 from "./scenarios/s4-create.js";
import * as s5 from "./scenarios/s5-grpc.js";
import * as s6 from "./scenarios/s6-validate.js";
import * as s7 from "./scenarios/s7-memory.js";
import * as s9 from "./scenarios/s9-paging.js";
import * as s10 from "./scenarios/s10-bbox.js";
import * as s11 from "./scenarios/s11-polygon.js";
import * as s12 from "./scenarios/s12-history.js";
import * as s13 from "./scenarios/s13-as-of.js";
import * as s14 from "./scenarios/s14-geojson.js";
import type { Rounds } from "./scenarios/sequential.js";
import type { Measured, Scenario } from "./scenarios/types.js";
import { BENCH_ACCOUNT, BENCH_ACTOR, type DatasetInfo, type HistoryInfo } from "./seed.js";
import { startIssuer } from "./tokens.js";
import type { ValidationResult } from "./validate.js";

// ---------------------------------------------------------------------------------------------
// Options

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(name);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = flag("--quick");
const plan = planFor(quick);
if (option("--runs")) plan.runs = Math.max(1, Number(option("--runs")));
if (option("--duration")) plan.duration = Math.max(1, Number(option("--duration")));
if (option("--batch-connections")) plan.batchConnections = Math.max(1, Number(option("--batch-connections")));
const alg = option("--alg") === "ES256" ? "ES256" : "RS256";
const beforeCommit = option("--before");
const profiling = quick ? flag("--profile") || flag("--profile-all") : !flag("--no-profile");
const started = startClock();
/** The machine's load average when the run starts (1, 5, 15 minutes), recorded in the report. */
const startLoad = loadavg();

mkdirSync(PROFILE_DIR, { recursive: true });
const runDir = mkdtempSync(join(tmpdir(), "source-ledger-bench-run-"));
process.once("exit", () => rmSync(runDir, { recursive: true, force: true }));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

// ---------------------------------------------------------------------------------------------
// The run

async function main(): Promise<void> {
  log(`mode ${plan.mode}: ${plan.runs} run(s) × ${plan.duration} s per load, ${plan.connections} connections`);

  // S6 first, while nothing else runs.
  const validation = s6.measure(plan);

  const compiling = Date.now();
  await compileServers();
  log(`servers compiled with tsc in ${((Date.now() - compiling) / 1000).toFixed(1)} s`);
  const ledgers = await prepareLedgers(plan.datasets, plan.history, flag("--fresh"));
  const before =
    beforeCommit === undefined
      ? null
      : await prepareBefore(beforeCommit, [plan.postSmall, plan.postLarge], ledgers.cacheDir);
  const issuer = await startIssuer(alg);
  const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });
  const fleet = await startFleet(plan, ledgers, issuer.issuer, runDir, before);
  // B1, S2 and S5 ask for the S2 ledger's ids in one random order.
  const ids = shuffled((ledgers.byCount.get(plan.get) as DatasetInfo).ids);
  const baseline = await s1.startBaseline(fleet.servers, ids[0], token, runDir);
  fleet.servers.set("baseline", baseline.server);
  // S10's reference page is as large as its boxes' typical answer: a preflight finds it.
  const search = fleet.servers.get("search") as ServerProcess;
  const bbox = await s10.prepare(plan, search, token);
  const polygons = s11.prepare(plan);
  // S12 and S13 (issue 10) read the history ledger from a process of their own.
  const historyServer = fleet.servers.get("history") as ServerProcess;
  const history = await s12.prepare(ledgers.history, historyServer, token);
  const asOf = await s13.prepare(ledgers.history, historyServer, token);

  // The order of every run: each reference just before the scenarios compared with it.
  const scenarios: Scenario[] = [
    s1.recordBaseline(ids),
    s2.scenario(plan, ids),
    ...s5.scenarios(plan, ids),
    s1.pageBaseline(),
    ...s3.scenarios(plan),
    ...s4.scenarios(plan, fleet.files, before),
    ...s10.scenarios(bbox),
    ...s11.scenarios(polygons),
    ...s12.scenarios(history),
    ...s13.scenarios(asOf),
    ...s14.scenarios(plan),
  ];
  const results = await runInterleaved(plan, scenarios, fleet.servers, token, (all, run) =>
    s5.alternated(s4.alternated(all, run), run),
  );
  // One connection, one request at a time, on the search server alone (the others are idle now).
  const issue11: Issue11 = {
    paging: await s9.measure(plan, search, token),
    bbox,
    bboxOne: await s10.measureOneConnection(plan, search, token, bbox),
    bboxLarge: await s10.measureLargeBoxes(plan, search, token),
    polygons,
    polygonOne: await s11.measureOneConnection(plan, search, token, polygons),
  };
  const issue10: Issue10 = {
    before,
    history,
    historyOne: await s12.measureOneConnection(plan, historyServer, token, history),
    historyPaced: await s12.measurePaced(
      plan,
      historyServer,
      token,
      history,
      median(measurements(scenarios, results).rps("S12-get")),
    ),
    asOf,
  };
  const memory = s7.measure(fleet.servers);
  log(`jwks fetched ${issuer.jwksRequests} time(s) by ${fleet.services} service processes`);
  await fleet.stopAll();

  const rows = reportRows(scenarios, results, validation, memory, issue11, issue10);
  // CPU profiles of the scenarios behind missed targets.
  const profiled = [...scenarios, s9.profileScenario(issue11.paging)];
  const profiles = profiling
    ? await profileScenarios({ plan, rows, scenarios: profiled, fleet, token, all: flag("--profile-all") })
    : {};
  // Held until the profiles' fresh servers are done with the ledgers too.
  fleet.releaseCache();
  await issuer.close();

  await writeResults({
    scenarios,
    results,
    rows,
    memory,
    validation,
    bodies: baseline.bodies,
    ledgers,
    profiles,
    issue11,
    issue10,
  });
  log(`done in ${elapsed()}`);
}

/** Issue 10's setups and what S12 measured at one connection. */
interface Issue10 {
  before: BeforeCode | null;
  history: s12.HistorySetup;
  historyOne: { history: Rounds; conflicts: Rounds };
  historyPaced: s12.Paced;
  asOf: s13.AsOfSetup;
}

/** What S9–S11 measured outside the interleaved loads (one connection, one request at a time). */
interface Issue11 {
  paging: s9.Paging;
  bbox: s10.BboxSetup;
  bboxOne: Rounds;
  bboxLarge: Rounds;
  polygons: s11.PolygonSetup;
  polygonOne: Rounds;
}

/** The report's rows, scenario by scenario, judged against their targets. */
function reportRows(
  scenarios: Scenario[],
  results: Map<string, Measured[]>,
  validation: ValidationResult[],
  memory: s7.Memory,
  issue11: Issue11,
  issue10: Issue10,
): Row[] {
  const m = measurements(scenarios, results);
  return judged([
    ...s1.rows(m),
    ...s2.rows(m),
    ...s3.rows(plan, m),
    ...s4.rows(plan, m, issue10.before),
    ...s5.rows(m),
    ...s6.rows(validation),
    ...s7.rows(plan, memory, m),
    ...s9.rows(issue11.paging),
    ...s10.rows(plan, m, issue11.bbox, issue11.bboxOne, issue11.bboxLarge),
    ...s11.rows(plan, m, issue11.polygons, issue11.polygonOne),
    ...s12.rows(m, issue10.history, issue10.historyOne, issue10.historyPaced, plan.connections),
    ...s13.rows(m, issue10.asOf, plan.connections),
    ...s14.rows(m),
  ]);
}

interface Outcome {
  scenarios: Scenario[];
  results: Map<string, Measured[]>;
  rows: Row[];
  memory: s7.Memory;
  validation: ValidationResult[];
  bodies: s1.Bodies;
  ledgers: Ledgers;
  profiles: Record<string, ProfileSummary>;
  issue11: Issue11;
  issue10: Issue10;
}

/** The table on stdout, bench/results/*.json and (full mode, unless --no-docs) docs/benchmarks.md. */
async function writeResults(outcome: Outcome): Promise<void> {
  const datasets = [...outcome.ledgers.byCount.values(), outcome.ledgers.history].map(
    ({ ids: _ids, history, ...rest }) => ({ ...rest, path: rest.path, history: history && historyCounts(history) }),
  );
  await writeReport({
    mode: plan.mode,
    plan,
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    command: quick ? "npm run bench -- --quick" : "npm run bench",
    argv,
    rows: outcome.rows,
    raw: rawRuns(outcome.scenarios, outcome.results),
    memory: outcome.memory,
    validation: outcome.validation,
    bodies: outcome.bodies,
    datasets,
    profiles: outcome.profiles,
    details: { ...issue11Details(outcome.issue11), ...issue10Details(outcome.issue10) },
    writeDocs: !quick && !flag("--no-docs"),
    alg,
    cpuCount: cpus().length,
    totalMemory: totalmem(),
    ledgerBytes: Object.fromEntries(datasets.map((d) => [basename(d.path), statSync(d.path).size])),
    loadAverage: { start: startLoad, end: loadavg() },
  });
}

/** S9–S11's raw figures for bench/results/*.json (the large lists of paths and bodies left out). */
function issue11Details(issue11: Issue11): Record<string, unknown> {
  const { loadPaths: _l, onePaths: _o, ...bbox } = issue11.bbox;
  const { loadBodies: _lb, oneBodies: _ob, ...polygons } = issue11.polygons;
  return {
    paging: issue11.paging,
    bbox: {
      ...bbox,
      preflightCounts: countsOf(bbox.preflightCounts),
      oneConnection: { ...issue11.bboxOne, counts: countsOf(issue11.bboxOne.counts) },
      largeBoxes: { ...issue11.bboxLarge, counts: countsOf(issue11.bboxLarge.counts) },
    },
    polygons: { ...polygons, oneConnection: { ...issue11.polygonOne, counts: countsOf(issue11.polygonOne.counts) } },
  };
}

/** The history ledger's info without its id lists. */
function historyCounts({ conflicted, deleted, lone, ...rest }: HistoryInfo) {
  return { ...rest, conflicted: conflicted.length, deleted: deleted.length, lone: lone.length };
}

/** S4's comparison and S12–S13's raw figures for bench/results/*.json (paths left out). */
function issue10Details(issue10: Issue10): Record<string, unknown> {
  const { historyPaths: _h, conflictPaths: _c, getPaths: _g, ...history } = issue10.history;
  const { before } = issue10;
  return {
    before: before && { commit: before.commit, dir: before.dir, ledgers: [...before.ledgers.keys()] },
    history: {
      ...history,
      events: countsOf(history.events),
      conflicts: countsOf(history.conflicts),
      oneConnection: {
        history: { ...issue10.historyOne.history, counts: countsOf(issue10.historyOne.history.counts) },
        conflicts: { ...issue10.historyOne.conflicts, counts: countsOf(issue10.historyOne.conflicts.counts) },
      },
      openLoop: issue10.historyPaced,
    },
    asOf: {
      stored: issue10.asOf.stored,
      counts: countsOf(issue10.asOf.counts),
      instants: issue10.asOf.paths.length,
      gets: issue10.asOf.getPaths.length,
    },
  };
}

/** How many answers had each record count. */
function countsOf(counts: number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const n of counts) out[n] = (out[n] ?? 0) + 1;
  return out;
}

main()
  .then(() => process.exit(0))
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
