/**
 * S1 baselines: a bare Fastify server (bench/baseline-server.ts, a separate compiled process) on
 * the service's paths, answering with the service's own bodies as constants. B1 is S2's reference
 * (one record), B100 S3's (a page of 100 records).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SERVER_BUILD_DIR, type ServerProcess, spawnServer } from "../proc.js";
import type { Row } from "../report.js";
import { LIST_PATH } from "./load.js";
import { fmt, log } from "./log.js";
import { type Measurements, median } from "./rows.js";
import type { Scenario } from "./types.js";

/** Body sizes in bytes, the service's and the baseline's. */
export interface Bodies {
  recordBytes: number;
  pageBytes: number;
  pageBytesSmallLedger: number;
  baselineRecordBytes: number;
  baselinePageBytes: number;
}

async function fetchText(port: number, path: string, token: string): Promise<string> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  return text;
}

/** The service's answers: the record `id` (S2's ledger) and the first page of each list ledger. */
async function serviceBodies(servers: Map<string, ServerProcess>, id: string, token: string) {
  const port = (name: string) => (servers.get(name) as ServerProcess).port;
  const one = await fetchText(port("get"), `/sources/${id}`, token);
  const pageSmall = await fetchText(port("list-small"), LIST_PATH, token);
  const pageLarge = await fetchText(port("list-large"), LIST_PATH, token);
  const record = JSON.parse(one) as { geometry: { coordinates: unknown[][] } };
  const pageRecords = (JSON.parse(pageLarge) as unknown[]).length;
  if (record.geometry.coordinates[0].length !== 100 || pageRecords !== 100) {
    throw new Error(`unexpected bodies: ${record.geometry.coordinates[0].length} positions, ${pageRecords} records`);
  }
  return { one, pageSmall, pageLarge };
}

/**
 * Starts the baseline server over the running service's bodies (record `id`, the first page of
 * the large list ledger); the caller adds the server to the others, as "baseline".
 */
export async function startBaseline(
  servers: Map<string, ServerProcess>,
  id: string,
  token: string,
  runDir: string,
): Promise<{ server: ServerProcess; bodies: Bodies }> {
  // The baseline answers with the service's own bodies.
  const { one, pageSmall, pageLarge } = await serviceBodies(servers, id, token);
  const bodiesFile = join(runDir, "bodies.json");
  writeFileSync(bodiesFile, JSON.stringify({ one: JSON.parse(one), page: JSON.parse(pageLarge) }));
  const server = await spawnServer({
    name: "baseline",
    entry: `${SERVER_BUILD_DIR}/bench/baseline-server.js`,
    env: { BASELINE_BODIES: bodiesFile },
  });
  const baselineOne = await fetchText(server.port, `/sources/${id}`, token);
  const baselinePage = await fetchText(server.port, LIST_PATH, token);
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
  return { server, bodies };
}

/** B1: the one-record body, for the same ids as S2. */
export function recordBaseline(ids: string[]): Scenario {
  return {
    key: "B1",
    label: "baseline: bare Fastify, one-record body",
    server: "baseline",
    load: { kind: "get", ids },
    perRequest: 1,
  };
}

/** B100: the 100-record body. */
export function pageBaseline(): Scenario {
  return {
    key: "B100",
    label: "baseline: bare Fastify, 100-record body",
    server: "baseline",
    load: { kind: "list" },
    perRequest: 1,
  };
}

export function rows(m: Measurements): Row[] {
  return [
    {
      id: "B1",
      scenario: `S1 ${m.label("B1")}`,
      metric: "req/s",
      value: median(m.rps("B1")),
      unit: "req/s",
      errors: m.failed("B1"),
    },
    { id: "B1.p99", scenario: `S1 ${m.label("B1")}`, metric: "p99", value: median(m.p99("B1")), unit: "ms" },
    {
      id: "B100",
      scenario: `S1 ${m.label("B100")}`,
      metric: "req/s",
      value: median(m.rps("B100")),
      unit: "req/s",
      errors: m.failed("B100"),
    },
    { id: "B100.p99", scenario: `S1 ${m.label("B100")}`, metric: "p99", value: median(m.p99("B100")), unit: "ms" },
  ];
}
