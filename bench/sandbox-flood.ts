/**
 * S8, the sandbox under abuse (issue 14): sandbox creates from 128 accounts at 20 connections for
 * 30 s against one compiled server with the default sandbox budget, reading the server's peak RSS
 * (VmHWM) and what it answered. Target: peak RSS < 600 MB, every answer 201 or 429 (with
 * Retry-After), production still answering at the end.
 *
 *   node --import tsx bench/sandbox-flood.ts [--seconds 30] [--accounts 128] [--connections 20]
 *                                             [--features 100] [--env '{"SANDBOX_MAX_MB":"256"}']
 *
 * It needs no cached ledger: the production store is an empty temporary file.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CREATE_REGION, cellPolygon } from "./geometry.js";
import { runHttpLoad } from "./http-load.js";
import { compileServers, memoryOf, SERVER_BUILD_DIR, SERVICE_NODE_FLAGS, spawnServer } from "./proc.js";
import { startIssuer } from "./tokens.js";

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? (args[i + 1] ?? fallback) : fallback;
};
const seconds = Number(option("--seconds", "30"));
const accounts = Number(option("--accounts", "128"));
const connections = Number(option("--connections", "20"));
const features = Number(option("--features", "100"));
const extraEnv = JSON.parse(option("--env", "{}")) as Record<string, string>;

const work = mkdtempSync(join(tmpdir(), "source-ledger-sandbox-flood-"));
process.once("exit", () => rmSync(work, { recursive: true, force: true }));

await compileServers();
const issuer = await startIssuer("RS256");
const tokens = await Promise.all(
  Array.from({ length: accounts }, (_, i) => issuer.token({ accountId: `acct-flood-${i}`, actor: `flood-${i}` })),
);
const service = await spawnServer({
  name: "service",
  entry: `${SERVER_BUILD_DIR}/bench/server.js`,
  env: {
    PORT: "0",
    HOST: "127.0.0.1",
    LEDGER_STORE: "sqlite",
    SQLITE_PATH: join(work, "ledger.sqlite"),
    AUTH_ISSUER: issuer.issuer,
    LOG_LEVEL: "silent",
    // The flood is about memory: 128 accounts each at the default write limit would be refused
    // long before the sandbox fills.
    RATE_LIMIT_READS_PER_S: "0",
    RATE_LIMIT_WRITES_PER_S: "0",
    ...extraEnv,
  },
  nodeArgs: [...SERVICE_NODE_FLAGS],
});

let request = 0;
let cell = 0;
const feature = () => {
  const c = cell++;
  return JSON.stringify({
    type: "Feature",
    id: `flood-${c}`,
    properties: { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z", source_type: "FIELD" },
    geometry: cellPolygon(CREATE_REGION, c % 1_000_000),
  });
};

try {
  const idle = memoryOf(service.pid);
  const result = await runHttpLoad({
    port: service.port,
    connections,
    duration: seconds,
    headers: { "content-type": "application/json" },
    requests: [
      {
        method: "POST",
        path: "/sandbox/sources",
        setupRequest: (r) => {
          const token = tokens[request++ % accounts];
          return {
            ...r,
            headers: { ...r.headers, authorization: `Bearer ${token}` },
            body: `{"type":"FeatureCollection","features":[${Array.from({ length: features }, feature).join(",")}]}`,
          };
        },
      },
    ],
  });
  const health = await fetch(`http://127.0.0.1:${service.port}/sources?limit=1`, {
    headers: { authorization: `Bearer ${tokens[0]}` },
  });
  const peak = memoryOf(service.pid);
  const answered = Object.entries(result.statusCodes)
    .map(([code, n]) => `${code}: ${n.toLocaleString("en-US")}`)
    .join(", ");
  console.log(
    [
      `S8 sandbox flood: ${accounts} accounts, ${connections} connections, ${seconds} s, ${features} features per request`,
      `  answers: ${answered} (failed ${result.failed}); ${Math.round(result.rps * features).toLocaleString("en-US")} sources/s stored`,
      `  server RSS idle ${idle.rssMb.toFixed(0)} MB, peak (VmHWM) ${peak.peakMb.toFixed(0)} MB: ${peak.peakMb < 600 ? "pass" : "FAIL"} (< 600 MB)`,
      `  production GET /sources after the flood: ${health.status}`,
    ].join("\n"),
  );
  if (peak.peakMb >= 600 || health.status !== 200) process.exitCode = 1;
} finally {
  service.child.kill();
}
