/**
 * Acceptance script for issue 11's gRPC page bound (not part of `npm test`; `npm run
 * bench:large-pages`): a gRPC client with DEFAULT options (grpc-js, 4 MiB receive limit) lists a
 * ledger of large sources with `limit: 1000`, following `next_page_token` until it is empty. It
 * must never see RESOURCE_EXHAUSTED and must receive every source exactly once.
 *
 * 1. A fresh SQLite file in $TMPDIR is loaded directly through the store, like bench/seed.ts:
 *    NewSourceRecords built as src/ledger/ledger.ts builds them (production ids, bounding box
 *    and geodesic area from src/geo), `--sources` (default 1,000) sources of `--positions`
 *    (default 100,000) positions each: one circle of radius 0.05°, translated per source on a
 *    0.2° grid, coordinates rounded to 7 decimals (~2.5 GB of GeoJSON text for the defaults).
 *    Free space in $TMPDIR is checked first; with less than the file needs (plus a margin), the
 *    count is scaled down to what fits, and the report says so.
 * 2. The service runs as the bench runs it (bench/server.ts compiled, production V8 flags, a real
 *    RS256 token from the bench's issuer).
 * 3. `ListSources` over grpc-js (proto loaded with @grpc/proto-loader from proto/, no generated
 *    code), default channel options; every answer's encoded size is read in the deserializer.
 *
 *   node --import tsx bench/large-pages.ts [--sources 1000] [--positions 100000] [--keep]
 *                                          [--deadline-s 600] [--json <file>]
 *
 * `--keep` leaves the ledger in $TMPDIR/source-ledger-large-pages/ and reuses it next time
 * (same counts). Exit code 0 when every check passed, 1 otherwise.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { geodesicAreaM2 } from "../src/geo/area.js";
import { boundingBox } from "../src/geo/bbox.js";
import type { PolygonGeometry, Position } from "../src/geo/types.js";
import { conflictPolicy } from "../src/ledger/conflict.js";
import { productionIds } from "../src/ledger/ids.js";
import type { NewSourceRecord } from "../src/model/records.js";
import { openSqliteStore } from "../src/store/sqlite/index.js";
import { compileServers, memoryOf, SERVER_BUILD_DIR, SERVICE_NODE_FLAGS, spawnServer } from "./proc.js";
import { BENCH_ACCOUNT, BENCH_ACTOR } from "./seed.js";
import { startIssuer } from "./tokens.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const wantedSources = Number(option("--sources", "1000"));
const positions = Number(option("--positions", "100000"));
const keep = args.includes("--keep");
const deadlineMs = Number(option("--deadline-s", "600")) * 1000;
const jsonOut = option("--json", "");

const RADIUS_DEG = 0.05;
const GRID = 40;
const STEP_DEG = 0.2;
/** Sources per insertMany transaction: ~60 MB of text at 100,000 positions. */
const BATCH = 25;
const CREATED_FROM = Date.UTC(2024, 0, 1);
const FOUR_MIB = 4 * 1024 * 1024;

const log = (message: string) => process.stderr.write(`[large-pages] ${message}\n`);
const fmt = (n: number) => n.toLocaleString("en-US");
const round7 = (value: number) => Math.round(value * 1e7) / 1e7;

/** The unit circle's offsets, once; every source's ring is them around its own centre. */
const offsets: Position[] = Array.from({ length: positions - 1 }, (_, i) => {
  const angle = (2 * Math.PI * i) / (positions - 1);
  return [RADIUS_DEG * Math.cos(angle), RADIUS_DEG * Math.sin(angle)];
});

function geometryOf(k: number): PolygonGeometry {
  const cx = -120 + (k % GRID) * STEP_DEG;
  const cy = 20 + Math.floor(k / GRID) * STEP_DEG;
  const ring: Position[] = offsets.map(([dx, dy]) => [round7(cx + dx), round7(cy + dy)]);
  ring.push([ring[0][0], ring[0][1]]);
  return { type: "Polygon", coordinates: [ring] };
}

/** A source as src/ledger/ledger.ts builds one for a create (no conflict or overlap analysis here). */
function recordOf(k: number, id: string): NewSourceRecord {
  const geometry = geometryOf(k);
  const createdAt = CREATED_FROM + k * 1000;
  return {
    id,
    accountId: BENCH_ACCOUNT,
    altId: `large-${k}`,
    methodology: "VM0042",
    tags: ["bench", "large"],
    stewardId: `grower-${k % 50}`,
    projectId: "prj-large",
    outcomeReportingYear: 2024,
    sourceType: "FIELD",
    attributeType: ["CARBON_REMOVAL"],
    geometrySource: "CUSTODIAN_DRAWN",
    geometry,
    bbox: boundingBox(geometry),
    areaM2: geodesicAreaM2(geometry),
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
    createdBy: BENCH_ACTOR,
    updatedBy: BENCH_ACTOR,
    createdAt,
    updatedAt: createdAt,
    conflict: false,
    unepOverlap: null,
  };
}

interface LedgerInfo {
  sources: number;
  positions: number;
  ids: string[];
  geoJsonBytes: number;
  fileBytes: number;
  seconds: number;
}

/** How many sources fit in $TMPDIR: the file takes about its GeoJSON text plus 5%; keep 2 GB and 20% spare. */
function sourcesThatFit(dir: string): { sources: number; freeBytes: number; perSource: number } {
  const stats = statfsSync(dir);
  const freeBytes = stats.bavail * stats.bsize;
  const perSource = Buffer.byteLength(JSON.stringify(geometryOf(0))) * 1.05 + 4096;
  const usable = Math.max(0, (freeBytes - 2 * 1024 ** 3) * 0.8);
  return { sources: Math.min(wantedSources, Math.floor(usable / perSource)), freeBytes, perSource };
}

async function loadLedger(path: string, sources: number): Promise<LedgerInfo> {
  const started = performance.now();
  for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  // With the conflict policy, as the service opens it: the store then records at once that this
  // (empty) ledger's conflict pairs are filled (issue 10), so the server's first open does not
  // read every stored geometry back to look for pairs.
  const store = openSqliteStore({ path, conflictPolicy });
  const newId = productionIds();
  const ids: string[] = [];
  let geoJsonBytes = 0;
  try {
    for (let from = 0; from < sources; from += BATCH) {
      const records: NewSourceRecord[] = [];
      for (let k = from; k < Math.min(sources, from + BATCH); k++) {
        const record = recordOf(k, newId());
        ids.push(record.id);
        records.push(record);
      }
      await store.insertMany(records);
      geoJsonBytes += records.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r.geometry)), 0);
      if ((from / BATCH) % 8 === 7 || from + BATCH >= sources) {
        log(`loaded ${fmt(Math.min(sources, from + BATCH))} of ${fmt(sources)} sources`);
      }
    }
  } finally {
    await store.close();
  }
  return {
    sources,
    positions,
    ids,
    geoJsonBytes,
    fileBytes: statSync(path).size,
    seconds: (performance.now() - started) / 1000,
  };
}

interface Page {
  sources: number;
  encodedBytes: number;
  ms: number;
}

interface ListOutcome {
  pages: Page[];
  ids: string[];
  /** The first failure, if any: its gRPC code name and details. */
  failure: { code: string; details: string; page: number } | null;
  /** Sources whose geometry did not come back with `positions` positions. */
  malformed: number;
}

interface MethodDefinition {
  path: string;
  requestSerialize: (value: object) => Buffer;
  responseDeserialize: (bytes: Buffer) => unknown;
}

interface RpcSource {
  id: string;
  geometry?: { polygon?: { rings?: { coordinates?: number[] }[] } };
}

/** ListSources with limit 1,000, following next_page_token, on a default grpc-js channel. */
async function listAll(port: number, token: string): Promise<ListOutcome> {
  const protoRoot = fileURLToPath(new URL("../proto", import.meta.url));
  const definition = protoLoader.loadSync("sourceledger/v2/source_ledger.proto", {
    includeDirs: [protoRoot],
    keepCase: true,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const service = definition["sourceledger.v2.SourceLedgerService"] as unknown as Record<string, MethodDefinition>;
  const method = service.ListSources;
  // DEFAULT options: no grpc.max_receive_message_length (4 MiB) or any other channel setting.
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const outcome: ListOutcome = { pages: [], ids: [], failure: null, malformed: 0 };
  let pageToken = "";
  try {
    do {
      let encodedBytes = 0;
      const metadata = new grpc.Metadata();
      metadata.add("authorization", `Bearer ${token}`);
      const started = performance.now();
      const page = outcome.pages.length + 1;
      const response = await new Promise<{ sources: RpcSource[]; next_page_token: string } | null>((resolve) => {
        client.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          (bytes: Buffer) => {
            encodedBytes = bytes.length;
            return method.responseDeserialize(bytes);
          },
          { limit: 1000, page_token: pageToken },
          metadata,
          { deadline: Date.now() + deadlineMs },
          (error, value) => {
            if (error) {
              outcome.failure = { code: grpc.status[error.code] ?? String(error.code), details: error.details, page };
              resolve(null);
            } else resolve(value as { sources: RpcSource[]; next_page_token: string });
          },
        );
      });
      if (response === null) break;
      const ms = performance.now() - started;
      outcome.pages.push({ sources: response.sources.length, encodedBytes, ms });
      for (const source of response.sources) {
        outcome.ids.push(source.id);
        const coordinates = source.geometry?.polygon?.rings?.[0]?.coordinates;
        if (coordinates?.length !== 2 * positions) outcome.malformed += 1;
      }
      if (page <= 3 || page % 25 === 0 || response.next_page_token === "") {
        log(
          `page ${page}: ${response.sources.length} sources, ${fmt(encodedBytes)} B, ${ms.toFixed(0)} ms; ${fmt(outcome.ids.length)} so far`,
        );
      }
      pageToken = response.next_page_token;
    } while (pageToken !== "");
  } finally {
    client.close();
  }
  return outcome;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;
}

async function main(): Promise<number> {
  const dir = join(tmpdir(), "source-ledger-large-pages");
  mkdirSync(dir, { recursive: true });
  const fit = sourcesThatFit(dir);
  const sources = fit.sources;
  if (sources < wantedSources) {
    log(
      `only ${(fit.freeBytes / 1024 ** 3).toFixed(1)} GB free in ${dir} (~${(fit.perSource / 1024 ** 2).toFixed(1)} MB a source): scaled down from ${fmt(wantedSources)} to ${fmt(sources)} sources`,
    );
  }
  if (sources < 3) throw new Error("not enough disk space for even 3 large sources");
  const path = join(dir, `ledger-${sources}x${positions}.sqlite`);
  const infoPath = `${path}.json`;
  let ledger: LedgerInfo;
  if (keep && existsSync(infoPath) && existsSync(path)) {
    ledger = JSON.parse(readFileSync(infoPath, "utf8")) as LedgerInfo;
    log(`reusing ${path} (${fmt(ledger.sources)} sources)`);
  } else {
    log(`loading ${fmt(sources)} sources of ${fmt(positions)} positions into ${path}`);
    ledger = await loadLedger(path, sources);
    if (keep) writeFileSync(infoPath, JSON.stringify(ledger));
    log(
      `loaded in ${ledger.seconds.toFixed(0)} s: ${(ledger.geoJsonBytes / 1024 ** 3).toFixed(2)} GB of GeoJSON, file ${(ledger.fileBytes / 1024 ** 3).toFixed(2)} GB`,
    );
  }

  await compileServers();
  const issuer = await startIssuer("RS256");
  const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });
  const server = await spawnServer({
    name: "service",
    entry: `${SERVER_BUILD_DIR}/bench/server.js`,
    env: {
      PORT: "0",
      HOST: "127.0.0.1",
      LEDGER_STORE: "sqlite",
      SQLITE_PATH: path,
      AUTH_ISSUER: issuer.issuer,
      LOG_LEVEL: "silent",
      RATE_LIMIT_READS_PER_S: "0",
      RATE_LIMIT_WRITES_PER_S: "0",
    },
    nodeArgs: [...SERVICE_NODE_FLAGS],
  });
  const idleRss = memoryOf(server.pid).rssMb;
  const started = performance.now();
  const exit = { text: null as string | null, stopping: false };
  server.child.once("exit", (code, signal) => {
    if (!exit.stopping) exit.text = `exited with ${code ?? signal}: ${server.stderr().slice(-1500)}`;
  });
  let outcome: ListOutcome;
  let peakMb = Number.NaN;
  try {
    outcome = await listAll(server.port, token);
  } finally {
    if (exit.text === null) peakMb = memoryOf(server.pid).peakMb;
    exit.stopping = true;
    await server.stop();
    await issuer.close();
    if (!keep) for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
  }
  const seconds = (performance.now() - started) / 1000;

  const seen = new Map<string, number>();
  for (const id of outcome.ids) seen.set(id, (seen.get(id) ?? 0) + 1);
  const duplicates = [...seen.values()].filter((n) => n > 1).length;
  const missing = ledger.ids.filter((id) => !seen.has(id)).length;
  const loaded = new Set(ledger.ids);
  const unknown = [...seen.keys()].filter((id) => !loaded.has(id)).length;
  const perPage = new Map<number, number>();
  for (const page of outcome.pages) perPage.set(page.sources, (perPage.get(page.sources) ?? 0) + 1);
  const maxEncoded = Math.max(0, ...outcome.pages.map((p) => p.encodedBytes));
  const checks = {
    "no RESOURCE_EXHAUSTED": outcome.failure?.code !== "RESOURCE_EXHAUSTED",
    "no failed call": outcome.failure === null,
    "every source exactly once": duplicates === 0 && missing === 0 && unknown === 0,
    "every geometry complete": outcome.malformed === 0,
    "every answer under 4 MiB": maxEncoded < FOUR_MIB,
  };
  const report = {
    sources: ledger.sources,
    wantedSources,
    positions,
    geoJsonGB: ledger.geoJsonBytes / 1024 ** 3,
    fileGB: ledger.fileBytes / 1024 ** 3,
    loadSeconds: ledger.seconds,
    pages: outcome.pages.length,
    sourcesPerPage: Object.fromEntries([...perPage].sort((a, b) => a[0] - b[0])),
    maxEncodedPageBytes: maxEncoded,
    fourMiB: FOUR_MIB,
    pageMs: {
      p50: percentile(
        outcome.pages.map((p) => p.ms),
        0.5,
      ),
      max: Math.max(0, ...outcome.pages.map((p) => p.ms)),
      first: outcome.pages[0]?.ms,
      last: outcome.pages.at(-1)?.ms,
    },
    listSeconds: seconds,
    received: outcome.ids.length,
    duplicates,
    missing,
    failure: outcome.failure,
    serverExit: exit.text,
    serverRssMb: { idle: idleRss, peak: peakMb },
    checks,
  };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2));
  const failed = Object.entries(checks).filter(([, ok]) => !ok);
  log(failed.length === 0 ? "PASS" : `FAIL: ${failed.map(([name]) => name).join("; ")}`);
  return failed.length === 0 ? 0 : 1;
}

main()
  .then((code) => process.exit(code))
  .catch((error: unknown) => {
    process.stderr.write(`large-pages failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
