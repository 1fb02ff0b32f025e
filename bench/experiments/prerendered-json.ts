/**
 * Experiment, not part of `npm run bench`: the ceiling for REST reads when the response JSON is
 * assembled from the stored row (the geometry column already holds GeoJSON text) instead of
 * JSON.parse → proto message → GeoJSON arrays → JSON.stringify. A bare Fastify server with
 * better-sqlite3 (read-only), the service's list and get queries, and no JWT or Connect
 * interceptor chain (a Map lookup stands in for the verified-token cache), so it bounds what the
 * service could reach, it does not predict it.
 *
 *   node --import tsx bench/experiments/prerendered-json.ts <ledger.sqlite> [cache_size]
 *
 * Use a ledger the bench built (printed by `npm run bench`, under $TMPDIR/source-ledger-bench/);
 * it loads with the bench's 50 connections for 3 s per measurement, twice.
 */
import { readFileSync } from "node:fs";
import Database from "better-sqlite3";
import Fastify from "fastify";
import { runHttpLoad } from "../http-load.js";
import { spawnServer } from "../proc.js";
import { BENCH_ACCOUNT, type DatasetInfo } from "../seed.js";

const COLUMNS =
  "id, account_id, alt_id, methodology, tags, steward_id, project_id, outcome_reporting_year, source_type, attribute_type, geometry_source, geometry, start_at, end_at, created_by, updated_by, created_at, updated_at, conflict, unep_overlap";

interface Row {
  [column: string]: string | number | null;
}

const text = (v: string | number | null) => (v === null ? "null" : JSON.stringify(v));
const time = (ms: string | number | null) => JSON.stringify(new Date(Number(ms)).toISOString());
/** Contract §4's record, by concatenation; JSON columns (tags, attribute_type, geometry, unep_overlap) are spliced in as text. */
const render = (r: Row) =>
  `{"id":${text(r.id)},"alt_id":${text(r.alt_id)},"methodology":${text(r.methodology)},"tags":${r.tags},"steward_id":${text(r.steward_id)},"project_id":${text(r.project_id)},"outcome_reporting_year":${r.outcome_reporting_year ?? "null"},"source_type":${text(r.source_type)},"attribute_type":${r.attribute_type},"geometry_source":${text(r.geometry_source)},"geometry":${r.geometry},"start_at":${time(r.start_at)},"end_at":${time(r.end_at)},"account_id":${text(r.account_id)},"created_by":${text(r.created_by)},"updated_by":${text(r.updated_by)},"created_at":${time(r.created_at)},"updated_at":${time(r.updated_at)},"conflict":${r.conflict === 1},"unep_overlap":${r.unep_overlap ?? "null"}}`;

async function serve(): Promise<void> {
  const db = new Database(process.env.SQLITE_PATH as string, { readonly: true });
  db.pragma(`cache_size = ${Number(process.env.CACHE_SIZE ?? -2000)}`);
  const get = db.prepare<[string, string], Row>(`SELECT ${COLUMNS} FROM sources s WHERE s.id = ? AND s.account_id = ?`);
  const list = db.prepare<[string, string, number, number], Row>(
    `SELECT ${COLUMNS} FROM sources s WHERE s.account_id = ? AND s.source_type = ? ORDER BY s.created_at, s.id LIMIT ? OFFSET ?`,
  );
  const principals = new Map<string, string>();
  const accountOf = (authorization: string | undefined) => {
    const key = authorization ?? "";
    if (!principals.has(key)) principals.set(key, BENCH_ACCOUNT);
    return principals.get(key) as string;
  };
  const app = Fastify({ logger: false });
  app.get<{ Params: { id: string } }>("/sources/:id", async (request, reply) => {
    const row = get.get(request.params.id, accountOf(request.headers.authorization));
    return row ? reply.type("application/json").send(render(row)) : reply.code(404).send();
  });
  app.get<{ Querystring: { source_type: string; limit: string } }>("/sources", async (request, reply) => {
    const rows = list.all(
      accountOf(request.headers.authorization),
      request.query.source_type,
      Number(request.query.limit),
      0,
    );
    return reply.type("application/json").send(`[${rows.map(render).join(",")}]`);
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  const address = app.server.address();
  process.send?.({ type: "listening", port: typeof address === "object" && address ? address.port : 0 });
  process.once("SIGTERM", () => process.exit(0));
  process.once("disconnect", () => process.exit(0));
}

async function measure(ledger: string, cacheSize: string): Promise<void> {
  const info = JSON.parse(readFileSync(`${ledger}.json`, "utf8")) as DatasetInfo;
  const server = await spawnServer({
    name: "prerendered",
    entry: "bench/experiments/prerendered-json.ts",
    env: { PRERENDERED_SERVER: "1", SQLITE_PATH: ledger, CACHE_SIZE: cacheSize },
  });
  const headers = { authorization: "Bearer stand-in" };
  let i = 0;
  for (let run = 1; run <= 2; run++) {
    const one = await runHttpLoad({
      port: server.port,
      connections: 50,
      duration: 3,
      headers,
      requests: [
        { method: "GET", setupRequest: (r) => ({ ...r, path: `/sources/${info.ids[i++ % info.ids.length]}` }) },
      ],
    });
    const page = await runHttpLoad({
      port: server.port,
      connections: 50,
      duration: 3,
      headers,
      requests: [{ method: "GET", path: "/sources?source_type=FIELD&limit=100" }],
    });
    process.stdout.write(
      `run ${run}: GET by id ${Math.round(one.rps)} req/s (p99 ${one.p99} ms), list of 100 ${Math.round(page.rps)} req/s (p99 ${page.p99} ms)\n`,
    );
  }
  await server.stop();
}

if (process.env.PRERENDERED_SERVER === "1") {
  await serve();
} else {
  const [ledger, cacheSize = "-2000"] = process.argv.slice(2);
  if (!ledger) {
    process.stderr.write(
      "usage: node --import tsx bench/experiments/prerendered-json.ts <ledger.sqlite> [cache_size]\n",
    );
    process.exit(2);
  }
  await measure(ledger, cacheSize);
  process.exit(0);
}
