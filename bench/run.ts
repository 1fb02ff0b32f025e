/**
 * `npm run bench` (full: median of 3 runs, about 4 minutes; a minute more the first time, while
 * the 1,000,000-record ledger is built) and `npm run bench -- --quick` (smaller ledgers, one
 * run, under a minute).
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
 */
import { createHash } from "node:crypto";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, relative } from "node:path";
import Database from "better-sqlite3";
import { type ProfileSummary, summariseProfile } from "./cpuprofile.js";
import { CREATE_REGION, cellPolygon } from "./geometry.js";
import { runGrpcLoad } from "./grpc-load.js";
import { type LoadResult, runHttpLoad } from "./http-load.js";
import {
  compileServers,
  cpuSecondsOf,
  machineBusySeconds,
  memoryOf,
  REPO_ROOT,
  runNode,
  SERVER_BUILD_DIR,
  SERVICE_NODE_FLAGS,
  type ServerProcess,
  spawnServer,
  waitUntilIdle,
} from "./proc.js";
import { type Row, writeReport } from "./report.js";
import { BENCH_ACCOUNT, BENCH_ACTOR, type DatasetInfo } from "./seed.js";
import { startIssuer } from "./tokens.js";
import { measureValidation, VALIDATION_SHAPES, type ValidationResult } from "./validate.js";

// ---------------------------------------------------------------------------------------------
// Plan

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(name);
const option = (name: string): string | undefined => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const quick = flag("--quick");

interface Plan {
  mode: "full" | "quick";
  /** Ledger sizes per role. */
  get: number;
  listSmall: number;
  listLarge: number;
  postSmall: number;
  postLarge: number;
  /** Ledgers to build; `base` ones are replicated from that (smaller) ledger. */
  datasets: { count: number; base?: number }[];
  runs: number;
  duration: number;
  warmup: number;
  profileSeconds: number;
  validationRuns: number;
  /** Extra attempts for a load during which other processes used over 0.25 cores (the quietest is kept). */
  noiseRetries: number;
  /** Seconds of measuring again the run may spend in all. */
  retryBudget: number;
  connections: number;
  /** Connections for batches of 100 (sources in flight = 100 × this). */
  batchConnections: number;
  grpcConcurrency: number;
  grpcConnections: number;
}

const plan: Plan = quick
  ? {
      mode: "quick",
      get: 10_000,
      listSmall: 1_000,
      listLarge: 100_000,
      postSmall: 1_000,
      postLarge: 10_000,
      datasets: [{ count: 1_000 }, { count: 10_000 }, { count: 100_000, base: 10_000 }],
      runs: 1,
      duration: 2,
      warmup: 0.5,
      profileSeconds: 2,
      validationRuns: 5,
      noiseRetries: 0,
      retryBudget: 0,
      connections: 50,
      batchConnections: 10,
      grpcConcurrency: 50,
      grpcConnections: 1,
    }
  : {
      mode: "full",
      get: 100_000,
      listSmall: 10_000,
      listLarge: 1_000_000,
      postSmall: 1_000,
      postLarge: 100_000,
      datasets: [{ count: 1_000 }, { count: 10_000 }, { count: 100_000 }, { count: 1_000_000, base: 10_000 }],
      runs: 3,
      duration: 3,
      warmup: 1,
      profileSeconds: 4,
      validationRuns: 9,
      noiseRetries: 1,
      retryBudget: 20,
      connections: 50,
      batchConnections: 10,
      grpcConcurrency: 50,
      grpcConnections: 1,
    };
if (option("--runs")) plan.runs = Math.max(1, Number(option("--runs")));
if (option("--duration")) plan.duration = Math.max(1, Number(option("--duration")));
if (option("--batch-connections")) plan.batchConnections = Math.max(1, Number(option("--batch-connections")));
const alg = option("--alg") === "ES256" ? "ES256" : "RS256";

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;
const log = (message: string) => process.stderr.write(`[bench ${elapsed()}] ${message}\n`);
const fmt = (n: number) => n.toLocaleString("en-US");

const RESULTS_DIR = join(REPO_ROOT, "bench", "results");
const PROFILE_DIR = join(RESULTS_DIR, "profiles");
mkdirSync(PROFILE_DIR, { recursive: true });
const runDir = mkdtempSync(join(tmpdir(), "source-ledger-bench-run-"));
process.once("exit", () => rmSync(runDir, { recursive: true, force: true }));
for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => process.exit(130));

// ---------------------------------------------------------------------------------------------
// Ledgers (cached across runs, keyed by the code that shapes them)

function filesUnder(dir: string): string[] {
  return readdirSync(join(REPO_ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(REPO_ROOT, join(e.parentPath, e.name)))
    .sort();
}

function seedFingerprint(): string {
  const hash = createHash("sha256");
  const files = [
    ...filesUnder("src/store"),
    "src/ledger/ids.ts",
    "src/geo/area.ts",
    "src/geo/bbox.ts",
    "bench/seed.ts",
    "bench/geometry.ts",
  ];
  for (const file of files) hash.update(file).update(readFileSync(join(REPO_ROOT, file)));
  return hash.digest("hex").slice(0, 16);
}

async function prepareLedgers(): Promise<Map<number, DatasetInfo>> {
  const cacheRoot = join(tmpdir(), "source-ledger-bench");
  const fingerprint = seedFingerprint();
  const cacheDir = join(cacheRoot, fingerprint);
  mkdirSync(cacheDir, { recursive: true });
  // Ledgers of older code are useless and large (the 1,000,000 one is ~5 GB).
  for (const entry of readdirSync(cacheRoot))
    if (entry !== fingerprint) rmSync(join(cacheRoot, entry), { recursive: true, force: true });
  if (flag("--fresh")) for (const entry of readdirSync(cacheDir)) rmSync(join(cacheDir, entry), { force: true });

  // A replicated ledger is not the same ledger as a distinct one of that size: separate files.
  const pathOf = (count: number, base?: number) =>
    join(cacheDir, base === undefined ? `ledger-${count}.sqlite` : `ledger-${count}-from-${base}.sqlite`);
  const ready = (path: string) => existsSync(`${path}.json`) && existsSync(path);
  const build = async (count: number, base?: number) => {
    const path = pathOf(count, base);
    if (ready(path)) return;
    rmSync(`${path}.json`, { force: true });
    const t = Date.now();
    await runNode("bench/seed.ts", base === undefined ? [path, String(count)] : [path, String(count), pathOf(base)]);
    log(
      `ledger of ${fmt(count)} built in ${((Date.now() - t) / 1000).toFixed(1)} s${base ? ` (replicated from ${fmt(base)})` : ""}`,
    );
  };
  // Two chains in parallel (two cores): each replicated ledger after its base, the rest alongside.
  const replicated = plan.datasets.filter((d) => d.base !== undefined);
  const bases = new Set(replicated.map((d) => d.base));
  const chainA = async () => {
    for (const d of replicated) {
      await build(d.base as number);
      await build(d.count, d.base);
    }
  };
  const chainB = async () => {
    for (const d of plan.datasets) if (d.base === undefined && !bases.has(d.count)) await build(d.count);
  };
  await Promise.all([chainA(), chainB()]);
  const infos = new Map<number, DatasetInfo>();
  for (const d of plan.datasets) {
    infos.set(d.count, JSON.parse(readFileSync(`${pathOf(d.count, d.base)}.json`, "utf8")) as DatasetInfo);
  }
  return infos;
}

/** Deletes what scenario 4 created, so every run writes into a ledger of the planned size. */
function removeCreatedSources(path: string): number {
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

// ---------------------------------------------------------------------------------------------
// Loads

function shuffled<T>(items: readonly T[], seed = 42): T[] {
  const out = [...items];
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

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
const createBody = (features: number) =>
  `{"type":"FeatureCollection","features":[${Array.from({ length: features }, featureJson).join(",")}]}`;

type LoadKind =
  | { kind: "get"; ids: string[] }
  | { kind: "list" }
  | { kind: "create"; features: number }
  | { kind: "grpc"; ids: string[]; client: "h2" | "connect"; acceptCompression: boolean };

const LIST_PATH = "/sources?source_type=FIELD&limit=100";
/** Other processes busier than this during a load make it a candidate for measuring again. */
const NOISY_CORES = 0.25;

async function runLoad(port: number, load: LoadKind, token: string, duration: number): Promise<LoadResult> {
  const headers = { authorization: `Bearer ${token}` };
  switch (load.kind) {
    case "grpc":
      return runGrpcLoad({
        client: load.client,
        port,
        token,
        ids: load.ids,
        concurrency: plan.grpcConcurrency,
        connections: plan.grpcConnections,
        duration,
        acceptCompression: load.acceptCompression,
      });
    case "get": {
      let i = 0;
      const { ids } = load;
      return runHttpLoad({
        port,
        duration,
        connections: plan.connections,
        headers,
        requests: [{ method: "GET", setupRequest: (r) => ({ ...r, path: `/sources/${ids[i++ % ids.length]}` }) }],
      });
    }
    case "list":
      return runHttpLoad({
        port,
        duration,
        connections: plan.connections,
        headers,
        requests: [{ method: "GET", path: LIST_PATH }],
      });
    case "create": {
      const { features } = load;
      return runHttpLoad({
        port,
        duration,
        connections: features > 1 ? plan.batchConnections : plan.connections,
        headers: { ...headers, "content-type": "application/json" },
        requests: [{ method: "POST", path: "/sources", setupRequest: (r) => ({ ...r, body: createBody(features) }) }],
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Scenario {
  key: string;
  label: string;
  server: string;
  load: LoadKind;
  /** Sources per successful request (create). */
  perRequest: number;
  /** The ledger file to clean after each load (creates). */
  cleans?: string;
}

interface ServerSpec {
  name: string;
  /** Which ledger (count) it serves; copies are made for the ones that get writes. */
  ledger: number;
  writes: boolean;
  baseline?: boolean;
}

interface Measured extends LoadResult {
  /** Cores used during the load: the server process, this process (load generator), everything else. */
  cpu: { serverCores: number; benchCores: number; otherCores: number };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function main(): Promise<void> {
  log(`mode ${plan.mode}: ${plan.runs} run(s) × ${plan.duration} s per load, ${plan.connections} connections`);

  // S6 first, while nothing else runs.
  const validation: ValidationResult[] = VALIDATION_SHAPES.map((shape) =>
    measureValidation(shape, plan.validationRuns),
  );
  for (const v of validation)
    log(`S6 checkGeometry ${v.shape}: median ${v.medianMs.toFixed(1)} ms (${v.issues} issues)`);

  const compiling = Date.now();
  await compileServers();
  log(`servers compiled with tsc in ${((Date.now() - compiling) / 1000).toFixed(1)} s`);
  const ledgers = await prepareLedgers();
  const ledgerPath = (count: number) => (ledgers.get(count) as DatasetInfo).path;
  const issuer = await startIssuer(alg);
  const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });

  const serverSpecs: ServerSpec[] = [
    { name: "get", ledger: plan.get, writes: false },
    { name: "grpc", ledger: plan.get, writes: false },
    { name: "list-small", ledger: plan.listSmall, writes: false },
    { name: "list-large", ledger: plan.listLarge, writes: false },
    { name: "create-small", ledger: plan.postSmall, writes: true },
    { name: "create-large", ledger: plan.postLarge, writes: true },
  ];
  const files = new Map<string, string>();
  for (const spec of serverSpecs) {
    if (!spec.writes) files.set(spec.name, ledgerPath(spec.ledger));
    else {
      const copy = join(runDir, `${spec.name}.sqlite`);
      copyFileSync(ledgerPath(spec.ledger), copy);
      files.set(spec.name, copy);
    }
  }
  const serviceEnv = (file: string): Record<string, string> => ({
    PORT: "0",
    HOST: "127.0.0.1",
    LEDGER_STORE: "sqlite",
    SQLITE_PATH: file,
    AUTH_ISSUER: issuer.issuer,
    LOG_LEVEL: "silent",
  });
  const startService = (name: string, nodeArgs: string[] = []) =>
    spawnServer({
      name,
      entry: `${SERVER_BUILD_DIR}/bench/server.js`,
      env: serviceEnv(files.get(name) as string),
      nodeArgs: [...SERVICE_NODE_FLAGS, ...nodeArgs],
    });

  log("starting servers");
  const servers = new Map<string, ServerProcess>(
    await Promise.all(serverSpecs.map(async (spec) => [spec.name, await startService(spec.name)] as const)),
  );

  // The baseline answers with the service's own bodies.
  const ids = shuffled((ledgers.get(plan.get) as DatasetInfo).ids);
  const fetchText = async (port: number, path: string) => {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 300)}`);
    return text;
  };
  const one = await fetchText((servers.get("get") as ServerProcess).port, `/sources/${ids[0]}`);
  const pageSmall = await fetchText((servers.get("list-small") as ServerProcess).port, LIST_PATH);
  const pageLarge = await fetchText((servers.get("list-large") as ServerProcess).port, LIST_PATH);
  const record = JSON.parse(one) as { geometry: { coordinates: unknown[][] } };
  const pageRecords = (JSON.parse(pageLarge) as unknown[]).length;
  if (record.geometry.coordinates[0].length !== 100 || pageRecords !== 100) {
    throw new Error(`unexpected bodies: ${record.geometry.coordinates[0].length} positions, ${pageRecords} records`);
  }
  const bodiesFile = join(runDir, "bodies.json");
  writeFileSync(bodiesFile, JSON.stringify({ one: JSON.parse(one), page: JSON.parse(pageLarge) }));
  servers.set(
    "baseline",
    await spawnServer({
      name: "baseline",
      entry: `${SERVER_BUILD_DIR}/bench/baseline-server.js`,
      env: { BASELINE_BODIES: bodiesFile },
    }),
  );
  const baselineOne = await fetchText((servers.get("baseline") as ServerProcess).port, `/sources/${ids[0]}`);
  const baselinePage = await fetchText((servers.get("baseline") as ServerProcess).port, LIST_PATH);
  const bodies = {
    recordBytes: Buffer.byteLength(one),
    pageBytes: Buffer.byteLength(pageLarge),
    pageBytesSmallLedger: Buffer.byteLength(pageSmall),
    baselineRecordBytes: Buffer.byteLength(baselineOne),
    baselinePageBytes: Buffer.byteLength(baselinePage),
  };
  log(
    `bodies: record ${fmt(bodies.recordBytes)} B, page of 100 ${fmt(bodies.pageBytes)} B (baseline ${fmt(bodies.baselineRecordBytes)} / ${fmt(bodies.baselinePageBytes)} B)`,
  );

  const scenarios: Scenario[] = [
    {
      key: "B1",
      label: "baseline: bare Fastify, one-record body",
      server: "baseline",
      load: { kind: "get", ids },
      perRequest: 1,
    },
    {
      key: "S2",
      label: `GET /sources/{id} (${fmt(plan.get)} stored)`,
      server: "get",
      load: { kind: "get", ids },
      perRequest: 1,
    },
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
    {
      key: "B100",
      label: "baseline: bare Fastify, 100-record body",
      server: "baseline",
      load: { kind: "list" },
      perRequest: 1,
    },
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
    ...([1, 100] as const).flatMap((features) =>
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
    ),
  ];

  /** One load against a server, with the CPU each side used; waits for the server to go idle after. */
  const measure = async (server: ServerProcess, scenario: Scenario, duration: number): Promise<Measured> => {
    const before = {
      server: cpuSecondsOf(server.pid),
      bench: cpuSecondsOf("self"),
      machine: machineBusySeconds(),
      at: performance.now(),
    };
    const result = await runLoad(server.port, scenario.load, token, duration);
    const wall = (performance.now() - before.at) / 1000;
    const serverCores = (cpuSecondsOf(server.pid) - before.server) / wall;
    const benchCores = (cpuSecondsOf("self") - before.bench) / wall;
    const otherCores = Math.max(0, (machineBusySeconds() - before.machine) / wall - serverCores - benchCores);
    // Requests the load generator gave up on at the deadline may still be running in the server.
    await waitUntilIdle(server.pid);
    if (scenario.cleans) removeCreatedSources(scenario.cleans);
    return { ...result, cpu: { serverCores, benchCores, otherCores } };
  };

  const results = new Map<string, Measured[]>(scenarios.map((s) => [s.key, []]));
  let retrySeconds = 0;
  const warmed = new Set<string>();
  for (let run = 1; run <= plan.runs; run++) {
    for (const scenario of scenarios) {
      const server = servers.get(scenario.server) as ServerProcess;
      const warmKey = `${scenario.server}/${scenario.key}`;
      if (!warmed.has(warmKey)) {
        await measure(server, scenario, plan.warmup);
        warmed.add(warmKey);
      }
      let result = await measure(server, scenario, plan.duration);
      for (let retry = 1; retry <= plan.noiseRetries && result.cpu.otherCores > NOISY_CORES; retry++) {
        if (retrySeconds + plan.duration > plan.retryBudget) break;
        retrySeconds += plan.duration;
        log(
          `run ${run} ${scenario.key}: other processes used ${result.cpu.otherCores.toFixed(2)} cores; measuring again`,
        );
        const again = await measure(server, scenario, plan.duration);
        if (again.cpu.otherCores < result.cpu.otherCores) result = again;
      }
      (results.get(scenario.key) as Measured[]).push(result);
      const failures = result.failed > 0 ? `, ${result.failed} FAILED ${JSON.stringify(result.statusCodes)}` : "";
      log(
        `run ${run} ${scenario.key.padEnd(16)} ${fmt(Math.round(result.rps * scenario.perRequest)).padStart(7)} ${scenario.perRequest > 1 ? "sources/s" : "req/s"}, p50 ${result.p50.toFixed(1)} ms, p99 ${result.p99.toFixed(1)} ms; cores: server ${result.cpu.serverCores.toFixed(2)}, bench ${result.cpu.benchCores.toFixed(2)}, other ${result.cpu.otherCores.toFixed(2)}${failures}`,
      );
    }
  }

  const memory: Record<string, { peakMb: number; rssMb: number }> = {};
  for (const [name, server] of servers) memory[name] = memoryOf(server.pid);
  log(`jwks fetched ${issuer.jwksRequests} time(s) by ${serverSpecs.length} service processes`);
  await Promise.all([...servers.values()].map((s) => s.stop()));

  // -------------------------------------------------------------------------------------------
  // Rows: values are medians over runs; ratios are medians of the per-run ratios.
  const series = (key: string, pick: (r: Measured, s: Scenario) => number) => {
    const scenario = scenarios.find((s) => s.key === key) as Scenario;
    return (results.get(key) as Measured[]).map((r) => pick(r, scenario));
  };
  const rps = (key: string) => series(key, (r, s) => r.rps * s.perRequest);
  const p99 = (key: string) => series(key, (r) => r.p99);
  const p50 = (key: string) => series(key, (r) => r.p50);
  const failed = (key: string) => series(key, (r) => r.failed).reduce((a, b) => a + b, 0);
  const ratios = (a: number[], b: number[]) => median(a.map((x, i) => x / b[i]));
  const label = (key: string) => (scenarios.find((s) => s.key === key) as Scenario).label;
  const profileOf: Record<string, string> = {
    S2: "S2",
    "S3-small": "S3-small",
    "S3-large": "S3-large",
    "S4-batch-large": "S4-batch-large",
    "S4-single-large": "S4-single-large",
    S5: "S5",
  };
  const rows: Row[] = [];
  const add = (row: Row) => rows.push({ ...row, errors: row.errors ?? 0 });
  add({
    id: "B1",
    scenario: `S1 ${label("B1")}`,
    metric: "req/s",
    value: median(rps("B1")),
    unit: "req/s",
    errors: failed("B1"),
  });
  add({ id: "B1.p99", scenario: `S1 ${label("B1")}`, metric: "p99", value: median(p99("B1")), unit: "ms" });
  add({
    id: "B100",
    scenario: `S1 ${label("B100")}`,
    metric: "req/s",
    value: median(rps("B100")),
    unit: "req/s",
    errors: failed("B100"),
  });
  add({ id: "B100.p99", scenario: `S1 ${label("B100")}`, metric: "p99", value: median(p99("B100")), unit: "ms" });
  add({
    id: "S2.ratio",
    scenario: `S2 ${label("S2")}`,
    metric: "req/s vs baseline",
    value: median(rps("S2")),
    unit: "req/s",
    baseline: median(rps("B1")),
    ratio: ratios(rps("S2"), rps("B1")),
    target: { on: "ratio", op: ">=", threshold: 0.5 },
    profile: profileOf.S2,
    errors: failed("S2"),
  });
  add({
    id: "S2.p99",
    scenario: `S2 ${label("S2")}`,
    metric: "p99 latency",
    value: median(p99("S2")),
    unit: "ms",
    target: { on: "value", op: "<", threshold: 10 },
    profile: profileOf.S2,
  });
  for (const size of ["small", "large"] as const) {
    const key = `S3-${size}`;
    add({
      id: `${key}.ratio`,
      scenario: `S3 ${label(key)}`,
      metric: "req/s vs baseline",
      value: median(rps(key)),
      unit: "req/s",
      baseline: median(rps("B100")),
      ratio: ratios(rps(key), rps("B100")),
      target: { on: "ratio", op: ">=", threshold: 0.4 },
      profile: profileOf[key],
      errors: failed(key),
    });
    add({
      id: `${key}.p99`,
      scenario: `S3 ${label(key)}`,
      metric: "p99 latency",
      value: median(p99(key)),
      unit: "ms",
      target: size === "large" ? { on: "value", op: "<", threshold: 20 } : undefined,
      profile: profileOf[key],
    });
  }
  add({
    id: "S3.growth",
    scenario: `S3 cost ${fmt(plan.listLarge)} vs ${fmt(plan.listSmall)} stored`,
    metric: "time per request ratio",
    value: ratios(rps("S3-small"), rps("S3-large")),
    unit: "×",
    target: { on: "value", op: "<=", threshold: 1.5 },
    profile: profileOf["S3-large"],
    note: `p50 ratio ${median(p50("S3-large").map((x, i) => x / Math.max(1e-9, p50("S3-small")[i]))).toFixed(2)}×`,
  });
  add({
    id: "S4.batch",
    scenario: `S4 ${label("S4-batch-large")}`,
    metric: "sources/s",
    value: median(rps("S4-batch-large")),
    unit: "sources/s",
    target: { on: "value", op: ">=", threshold: 3000 },
    profile: profileOf["S4-batch-large"],
    errors: failed("S4-batch-large"),
  });
  add({
    id: "S4.batch.p99",
    scenario: `S4 ${label("S4-batch-large")}`,
    metric: "p99 latency",
    value: median(p99("S4-batch-large")),
    unit: "ms",
  });
  add({
    id: "S4.batch.small",
    scenario: `S4 ${label("S4-batch-small")}`,
    metric: "sources/s",
    value: median(rps("S4-batch-small")),
    unit: "sources/s",
    errors: failed("S4-batch-small"),
  });
  add({
    id: "S4.batch.degradation",
    scenario: `S4 batches: ${fmt(plan.postSmall)} → ${fmt(plan.postLarge)} stored`,
    metric: "throughput drop",
    value: ratios(rps("S4-batch-small"), rps("S4-batch-large")),
    unit: "×",
    target: { on: "value", op: "<=", threshold: 1.5 },
    profile: profileOf["S4-batch-large"],
  });
  add({
    id: "S4.single.p99",
    scenario: `S4 ${label("S4-single-large")}`,
    metric: "p99 latency",
    value: median(p99("S4-single-large")),
    unit: "ms",
    target: { on: "value", op: "<", threshold: 15 },
    profile: profileOf["S4-single-large"],
    errors: failed("S4-single-large"),
  });
  add({
    id: "S4.single",
    scenario: `S4 ${label("S4-single-large")}`,
    metric: "sources/s",
    value: median(rps("S4-single-large")),
    unit: "sources/s",
  });
  add({
    id: "S4.single.small.p99",
    scenario: `S4 ${label("S4-single-small")}`,
    metric: "p99 latency",
    value: median(p99("S4-single-small")),
    unit: "ms",
    errors: failed("S4-single-small"),
  });
  add({
    id: "S4.single.degradation",
    scenario: `S4 single feature: ${fmt(plan.postSmall)} → ${fmt(plan.postLarge)} stored`,
    metric: "p99 growth",
    value: ratios(
      p99("S4-single-large"),
      p99("S4-single-small").map((x) => Math.max(1, x)),
    ),
    unit: "×",
    target: { on: "value", op: "<=", threshold: 1.5 },
    profile: profileOf["S4-single-large"],
    note: `throughput drop ${ratios(rps("S4-single-small"), rps("S4-single-large")).toFixed(2)}×`,
  });
  add({
    id: "S5.ratio",
    scenario: `S5 ${label("S5")}`,
    metric: "calls/s vs S2 REST",
    value: median(rps("S5")),
    unit: "req/s",
    baseline: median(rps("S2")),
    ratio: ratios(rps("S5"), rps("S2")),
    target: { on: "ratio", op: ">=", threshold: 1 },
    profile: profileOf.S5,
    errors: failed("S5"),
  });
  add({ id: "S5.p99", scenario: `S5 ${label("S5")}`, metric: "p99 latency", value: median(p99("S5")), unit: "ms" });
  for (const key of ["S5-identity", "S5-connect"]) {
    add({
      id: key,
      scenario: `S5 ${label(key)}`,
      metric: "calls/s vs S2 REST",
      value: median(rps(key)),
      unit: "req/s",
      baseline: median(rps("S2")),
      ratio: ratios(rps(key), rps("S2")),
      errors: failed(key),
      note: `p99 ${median(p99(key)).toFixed(1)} ms`,
    });
  }
  validation.forEach((v, i) => {
    add({
      id: `S6.${i}`,
      scenario: `S6 checkGeometry, MultiPolygon of ${v.shape} (${fmt(v.positions)} positions)`,
      metric: `median of ${v.runsMs.length}`,
      value: v.medianMs,
      unit: "ms",
      target: { on: "value", op: "<", threshold: 150 },
      profile: "S6",
      errors: v.issues,
    });
  });
  const s2to4 = ["get", "list-small", "list-large", "create-small", "create-large"];
  const peak = Math.max(...s2to4.map((n) => memory[n].peakMb));
  add({
    id: "S7.max",
    scenario: "S7 peak RSS of the servers of S2–S4 (VmHWM)",
    metric: "max",
    value: peak,
    unit: "MB",
    target: { on: "value", op: "<", threshold: 300 },
    note: s2to4.map((n) => `${n} ${memory[n].peakMb.toFixed(0)}`).join(", "),
  });
  add({
    id: "S7.grpc",
    scenario: "S7 peak RSS of the S5 server (gRPC only, not in the target)",
    metric: "VmHWM",
    value: memory.grpc.peakMb,
    unit: "MB",
  });
  add({
    id: "S7.large",
    scenario: `S7 peak RSS, server with ${fmt(plan.listLarge)} stored`,
    metric: "VmHWM",
    value: memory["list-large"].peakMb,
    unit: "MB",
    target: { on: "value", op: "<", threshold: 300 },
  });
  for (const row of rows) {
    if (!row.target) continue;
    const x = row.target.on === "ratio" ? (row.ratio as number) : row.value;
    const { op, threshold } = row.target;
    row.pass =
      (op === ">=" ? x >= threshold : op === "<" ? x < threshold : x <= threshold) && !(row.errors && row.errors > 0);
  }

  // -------------------------------------------------------------------------------------------
  // CPU profiles of the scenarios behind missed targets.
  const profiles: Record<string, ProfileSummary> = {};
  const wanted = new Set<string>(
    flag("--profile-all")
      ? Object.values(profileOf).concat("S6")
      : rows.filter((r) => r.pass === false && r.profile).map((r) => r.profile as string),
  );
  const profiling = quick ? flag("--profile") || flag("--profile-all") : !flag("--no-profile");
  if (profiling && wanted.size > 0) {
    log(`profiling ${[...wanted].join(", ")}`);
    rmSync(PROFILE_DIR, { recursive: true, force: true });
    for (const key of wanted) {
      // One directory per profile: Node writes one file per thread (tsx's loader, in S6, runs in a worker),
      // named CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile; thread 0 is the main thread.
      const dir = join(PROFILE_DIR, key);
      mkdirSync(dir, { recursive: true });
      const profileArgs = ["--cpu-prof", "--cpu-prof-dir", dir];
      const mainThreadProfile = () => {
        const file = readdirSync(dir).find((f) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(f));
        if (!file) throw new Error(`no main-thread profile in ${dir}: ${readdirSync(dir).join(", ")}`);
        return join(dir, file);
      };
      if (key === "S6") {
        await runNode("bench/validate.ts", [String(plan.profileSeconds)], profileArgs);
        profiles[key] = summariseProfile(mainThreadProfile(), { skipMs: 1000 });
        log(`profiled S6: busy ${profiles[key].busyMs} ms`);
        continue;
      }
      const scenario = scenarios.find((s) => s.key === key) as Scenario;
      const spawned = Date.now();
      const server = await startService(scenario.server, profileArgs);
      await runLoad(server.port, scenario.load, token, plan.warmup);
      await waitUntilIdle(server.pid);
      if (scenario.cleans) removeCreatedSources(scenario.cleans);
      // The profile's clock starts with the process: keep only the measured load's samples.
      const from = Date.now() - spawned;
      const result = await runLoad(server.port, scenario.load, token, plan.profileSeconds);
      const until = Date.now() - spawned;
      await waitUntilIdle(server.pid);
      await server.stop();
      if (scenario.cleans) removeCreatedSources(scenario.cleans);
      profiles[key] = summariseProfile(mainThreadProfile(), { skipMs: from, untilMs: until });
      log(
        `profiled ${key}: ${fmt(Math.round(result.rps * scenario.perRequest))}/s under the profiler, busy ${profiles[key].busyMs} ms`,
      );
    }
  }
  await issuer.close();

  const datasets = [...ledgers.values()].map(({ ids: _ids, ...rest }) => ({ ...rest, path: rest.path }));
  await writeReport({
    mode: plan.mode,
    plan,
    startedAt: new Date(started).toISOString(),
    seconds: (Date.now() - started) / 1000,
    command: quick ? "npm run bench -- --quick" : "npm run bench",
    argv,
    rows,
    raw: Object.fromEntries(
      scenarios.map((s) => [
        s.key,
        { label: s.label, perRequest: s.perRequest, server: s.server, runs: results.get(s.key) as Measured[] },
      ]),
    ),
    memory,
    validation,
    bodies,
    datasets,
    profiles,
    writeDocs: !quick && !flag("--no-docs"),
    alg,
    cpuCount: cpus().length,
    totalMemory: totalmem(),
    ledgerBytes: Object.fromEntries(datasets.map((d) => [d.count, statSync(d.path).size])),
  });
  log(`done in ${elapsed()}`);
}

main()
  .then(() => process.exit(0))
  .catch((error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
