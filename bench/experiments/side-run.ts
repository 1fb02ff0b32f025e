/**
 * Experiment, not part of `npm run bench`: one scenario against one freshly started server, loads
 * back to back, for quick A/B measurements while changing the code (the numbers marked "side run"
 * in docs/benchmarks.md come from here). Uses the bench's compiled servers, JWKS, tokens and load
 * generators; run `npm run bench -- --quick` once first so that bench/.build and the cached ledgers
 * exist.
 *
 *   node --import tsx bench/experiments/side-run.ts <get|grpc|create|list|history> <ledger.sqlite> [options]
 *
 *   get     S2 against the S1 one-record baseline, alternating, 3 × 3 s
 *   grpc    S5 (h2 client, gzip accepted) against S2 on the same server, alternating, 3 × 3 s
 *   create  S4 into a copy of the ledger, 3 × 3 s  (--features N, default 1)
 *   list    S3 at 50 connections, 3 × 3 s with 5 s pauses, sampling the server's RssAnon
 *   history S12 on a history ledger: GET /sources/{id}, /history and /conflicts of its sources,
 *           alternating, 3 × 3 s each
 *
 *   --connections N    grpc: HTTP/2 connections the 50 calls in flight share (default 1)
 *   --identity 1       grpc: the client does not accept gzip
 *   --rate N           history: first, each load open-loop at N requests/s over 50 connections
 *                      (bench/paced-load.ts), 3 × 5 s
 *   --memory 1         grpc: after each pair, the service's RSS by kind and V8's heap (/metrics)
 *   --client C         grpc: the load client, frames (default: bench/h2-frames.ts) or h2 (node:http2)
 *   --window BYTES     grpc: the client's HTTP/2 receive windows (default HTTP/2's 65,535, as grpc-js)
 *   --grpc-only 1      grpc: no REST load between the gRPC ones (for a profile of gRPC alone)
 *   --rest-only 1      grpc: no gRPC load between the REST ones (for a profile of REST alone)
 *   --list 1           grpc: ListSources{limit: 100} against GET /sources?limit=100
 *   --idle MS          pause before each measured load of the service (get), as the full run's
 *                      interleaving does
 *   --node-args "..."  extra V8/Node flags for the service (default: the production flags)
 *   --env '{"K":"V"}'  extra environment for the service
 *
 * Ledgers: $TMPDIR/source-ledger-bench/<hash>/ledger-<count>.sqlite (printed by `npm run bench`).
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CREATE_REGION, cellPolygon } from "../geometry.js";
import { type GrpcLoad, runGrpcLoad } from "../grpc-load.js";
import { type LoadResult, runHttpLoad } from "../http-load.js";
import { runPacedLoad } from "../paced-load.js";
import { holdInPageCache } from "../page-cache.js";
import {
  cpuSecondsOf,
  memoryOf,
  SERVER_BUILD_DIR,
  SERVICE_NODE_FLAGS,
  type ServerProcess,
  spawnServer,
} from "../proc.js";
import { BENCH_ACCOUNT, BENCH_ACTOR, type DatasetInfo } from "../seed.js";
import { startIssuer } from "../tokens.js";

const [scenario, ledger, ...rest] = process.argv.slice(2);
const option = (name: string) => {
  const i = rest.indexOf(name);
  return i >= 0 ? rest[i + 1] : undefined;
};
if (!["get", "grpc", "create", "list", "history"].includes(scenario ?? "") || !ledger) {
  process.stderr.write(
    "usage: node --import tsx bench/experiments/side-run.ts <get|grpc|create|list|history> <ledger.sqlite> [--idle MS] [--features N] [--node-args '...'] [--env JSON]\n",
  );
  process.exit(2);
}

const work = mkdtempSync(join(tmpdir(), "source-ledger-side-run-"));
process.once("exit", () => rmSync(work, { recursive: true, force: true }));
const info = JSON.parse(readFileSync(`${ledger}.json`, "utf8")) as DatasetInfo;
const issuer = await startIssuer("RS256");
const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });
const headers = { authorization: `Bearer ${token}` };
const file = scenario === "create" ? join(work, "ledger.sqlite") : ledger;
if (scenario === "create") copyFileSync(ledger, file);

// As the full run does (bench/page-cache.ts): the ledger held in memory while the run lasts.
const hold = await holdInPageCache([file]);
process.once("exit", () => hold.release());
const service = await spawnServer({
  name: "service",
  entry: `${SERVER_BUILD_DIR}/bench/server.js`,
  env: {
    PORT: "0",
    HOST: "127.0.0.1",
    LEDGER_STORE: "sqlite",
    SQLITE_PATH: file,
    AUTH_ISSUER: issuer.issuer,
    LOG_LEVEL: "silent",
    // One bench client is one account: the per-account limits would measure themselves.
    RATE_LIMIT_READS_PER_S: "0",
    RATE_LIMIT_WRITES_PER_S: "0",
    ...(JSON.parse(option("--env") ?? "{}") as Record<string, string>),
  },
  nodeArgs: option("--node-args")?.split(" ").filter(Boolean) ?? [...SERVICE_NODE_FLAGS],
});
const servers: ServerProcess[] = [service];
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const line = (label: string, r: LoadResult, extra = "") =>
  `${label} ${Math.round(r.rps).toLocaleString("en-US")}/s p50 ${r.p50.toFixed(1)} ms p99 ${r.p99.toFixed(1)} ms failed ${r.failed}${extra}`;

/** The service's RSS by kind (/proc) and V8's heap and external memory (/metrics), in MB. */
async function memoryBreakdown(server: ServerProcess): Promise<string> {
  const status = readFileSync(`/proc/${server.pid}/status`, "utf8");
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) / 1024;
  const metrics = await (await fetch(`http://127.0.0.1:${server.port}/metrics`)).text();
  const gauge = (name: string) =>
    Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)`, "m").exec(metrics)?.[1] ?? 0) / 2 ** 20;
  const spaces = [...metrics.matchAll(/^nodejs_heap_space_size_total_bytes\{space="(\w+)"\} (\S+)/gm)]
    .map(([, space, bytes]) => `${space} ${(Number(bytes) / 2 ** 20).toFixed(0)}`)
    .join(", ");
  return `memory MB: VmHWM ${kb("VmHWM").toFixed(0)}, RSS ${kb("VmRSS").toFixed(0)} (anon ${kb("RssAnon").toFixed(0)}, file ${kb("RssFile").toFixed(0)}); heap total ${gauge("nodejs_heap_size_total_bytes").toFixed(0)}, used ${gauge("nodejs_heap_size_used_bytes").toFixed(0)}, external ${gauge("nodejs_external_memory_bytes").toFixed(0)}; spaces: ${spaces}`;
}

let next = 0;
const getLoad = (port: number, seconds: number) =>
  runHttpLoad({
    port,
    duration: seconds,
    connections: 50,
    headers,
    requests: [
      {
        method: "GET",
        setupRequest: (r) => ({ ...r, path: `/sources/${info.ids[(next++ * 7919) % info.ids.length]}` }),
      },
    ],
  });

try {
  if (scenario === "get") {
    const one = await (await fetch(`http://127.0.0.1:${service.port}/sources/${info.ids[0]}`, { headers })).text();
    const bodies = join(work, "bodies.json");
    writeFileSync(bodies, JSON.stringify({ one: JSON.parse(one), page: [] }));
    const baseline = await spawnServer({
      name: "baseline",
      entry: `${SERVER_BUILD_DIR}/bench/baseline-server.js`,
      env: { BASELINE_BODIES: bodies },
    });
    servers.push(baseline);
    await getLoad(service.port, 2);
    await getLoad(baseline.port, 2);
    for (let run = 0; run < 3; run++) {
      const b1 = await getLoad(baseline.port, 3);
      await pause(Number(option("--idle") ?? 0));
      const s2 = await getLoad(service.port, 3);
      console.log(`${line("B1", b1)} | ${line("S2", s2, ` ratio ${(s2.rps / b1.rps).toFixed(2)}`)}`);
    }
  } else if (scenario === "grpc") {
    const grpc = (seconds: number) =>
      runGrpcLoad({
        client: (option("--client") ?? "frames") as GrpcLoad["client"],
        port: service.port,
        token,
        ids: info.ids,
        concurrency: 50,
        connections: Number(option("--connections") ?? 1),
        duration: seconds,
        acceptCompression: option("--identity") === undefined,
        method: option("--list") === undefined ? "get" : "list",
        ...(option("--window") === undefined ? {} : { windowBytes: Number(option("--window")) }),
      });
    if (option("--rest-only") === undefined) await grpc(2);
    for (let run = 0; run < 3; run++) {
      const before = cpuSecondsOf(service.pid);
      const clientBefore = process.cpuUsage();
      const s5 =
        option("--rest-only") === undefined
          ? await grpc(3)
          : { rps: 0, p50: 0, p99: 0, mean: 0, ok: 0, failed: 0, statusCodes: {}, seconds: 1 };
      const cores = (cpuSecondsOf(service.pid) - before) / s5.seconds;
      const clientUsed = process.cpuUsage(clientBefore);
      const clientCores = (clientUsed.user + clientUsed.system) / 1e6 / s5.seconds;
      const restBefore = cpuSecondsOf(service.pid);
      const s2 =
        option("--grpc-only") !== undefined
          ? s5
          : option("--list") === undefined
            ? await getLoad(service.port, 3)
            : await runHttpLoad({
                port: service.port,
                duration: 3,
                connections: 50,
                headers,
                requests: [{ method: "GET", path: "/sources?limit=100" }],
              });
      const restCores = (cpuSecondsOf(service.pid) - restBefore) / s2.seconds;
      if (option("--memory") !== undefined) console.log(await memoryBreakdown(service));
      console.log(
        `${line("S5", s5, ` server cores ${cores.toFixed(2)}, client ${clientCores.toFixed(2)}`)} | ${line("S2", s2, ` server cores ${restCores.toFixed(2)}`)} | ratio ${(s5.rps / s2.rps).toFixed(2)}`,
      );
    }
  } else if (scenario === "create") {
    const features = Number(option("--features") ?? 1);
    let cell = 0;
    const feature = () => {
      const c = cell++;
      return JSON.stringify({
        type: "Feature",
        id: `side-${c}`,
        properties: {
          start_at: "2024-01-01T00:00:00Z",
          end_at: "2025-01-01T00:00:00Z",
          source_type: "FIELD",
          steward_id: `grower-${c % 500}`,
          tags: ["side-run"],
        },
        geometry: cellPolygon(CREATE_REGION, c),
      });
    };
    const load = (seconds: number) =>
      runHttpLoad({
        port: service.port,
        duration: seconds,
        connections: features > 1 ? 10 : 50,
        headers: { ...headers, "content-type": "application/json" },
        requests: [
          {
            method: "POST",
            path: "/sources",
            setupRequest: (r) => ({
              ...r,
              body: `{"type":"FeatureCollection","features":[${Array.from({ length: features }, feature).join(",")}]}`,
            }),
          },
        ],
      });
    await load(2);
    for (let run = 0; run < 3; run++) {
      const r = await load(3);
      console.log(
        `${line(`S4 (${features} per request)`, r)} = ${Math.round(r.rps * features).toLocaleString("en-US")} sources/s`,
      );
    }
  } else if (scenario === "history") {
    const history = info.history;
    if (history === undefined) throw new Error(`${ledger} is not a history ledger (ledger-history-*.sqlite)`);
    const live = [...history.conflicted, ...history.lone];
    const every = [...history.conflicted, ...history.deleted, ...history.lone];
    const load = (ids: string[], suffix: string, seconds: number) => {
      let i = 0;
      return runHttpLoad({
        port: service.port,
        duration: seconds,
        connections: 50,
        headers,
        requests: [
          {
            method: "GET",
            setupRequest: (r) => ({ ...r, path: `/sources/${ids[(i++ * 7919) % ids.length]}${suffix}` }),
          },
        ],
      });
    };
    const kinds = [
      { label: "get", ids: live, suffix: "" },
      { label: "history", ids: every, suffix: "/history" },
      { label: "conflicts", ids: live, suffix: "/conflicts" },
    ];
    for (const kind of kinds) await load(kind.ids, kind.suffix, 2);
    const rate = option("--rate");
    for (let run = 0; rate !== undefined && run < 3; run++) {
      const results: string[] = [];
      for (const kind of run % 2 === 0 ? kinds : [...kinds].reverse()) {
        const r = await runPacedLoad({
          port: service.port,
          token,
          rate: Number(rate),
          connections: 50,
          duration: 5,
          pathAt: (i) => `/sources/${kind.ids[(i * 7919 + run) % kind.ids.length]}${kind.suffix}`,
        });
        results.push(
          `${kind.label} at ${rate}/s: ${Math.round(r.rps)}/s p50 ${r.p50.toFixed(2)} ms p99 ${r.p99.toFixed(2)} ms max ${r.max.toFixed(1)} failed ${r.failed}`,
        );
      }
      console.log(results.join(" | "));
    }
    for (let run = 0; run < 3; run++) {
      const results: string[] = [];
      for (const kind of run % 2 === 0 ? kinds : [...kinds].reverse()) {
        const before = cpuSecondsOf(service.pid);
        const r = await load(kind.ids, kind.suffix, 3);
        const cores = (cpuSecondsOf(service.pid) - before) / r.seconds;
        results.push(line(kind.label, r, ` (${((cores / r.rps) * 1e6).toFixed(0)} µs server CPU a request)`));
      }
      console.log(results.join(" | "));
    }
  } else {
    const rssAnonMb = () =>
      Number(/RssAnon:\s+(\d+)/.exec(readFileSync(`/proc/${service.pid}/status`, "utf8"))?.[1] ?? 0) / 1024;
    let peakAnon = 0;
    const sampler = setInterval(() => (peakAnon = Math.max(peakAnon, rssAnonMb())), 50);
    console.log(`idle: RssAnon ${rssAnonMb().toFixed(0)} MB`);
    for (let run = 0; run < 3; run++) {
      const r = await runHttpLoad({
        port: service.port,
        duration: 3,
        connections: 50,
        headers,
        requests: [{ method: "GET", path: "/sources?source_type=FIELD&limit=100" }],
      });
      console.log(`${line("S3", r)} | peak RssAnon so far ${peakAnon.toFixed(0)} MB`);
      await pause(5_000);
    }
    clearInterval(sampler);
  }
  console.log(`service peak RSS (VmHWM) ${memoryOf(service.pid).peakMb.toFixed(0)} MB`);
} finally {
  for (const server of servers) await server.stop();
  await issuer.close();
}
process.exit(0);
