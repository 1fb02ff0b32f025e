/**
 * Experiment, not part of `npm run bench`: where S5's gRPC cost is, by removing layers. Each server
 * below runs in its own process and is loaded by the bench's h2 gRPC client (50 calls in flight on
 * one connection, 3 × 3 s), reporting calls/s and the server's cores:
 *
 *   bare     node:http2 answering every stream with one pre-encoded ~3 KB GetSourceResponse:
 *            the ceiling of node:http2 and of the load client on this machine
 *   busy     bare, spending a GetSource's server CPU (~170 µs) in a busy wait before each answer:
 *            whether one connection keeps a server of that cost busy
 *   connect  Connect's Node adapter mounted straight on node:http2 (no Fastify), with the real
 *            service, SQLite store and interceptors: what Connect itself costs per call
 *
 *   node --import tsx bench/experiments/grpc-ceilings.ts <ledger.sqlite> [bare,busy,connect]
 *
 * Compare with `side-run.ts grpc` (the service as deployed, through Fastify).
 */
import { fork } from "node:child_process";
import { readFileSync } from "node:fs";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { create, toBinary } from "@bufbuild/protobuf";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import { GetSourceResponseSchema, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { createAuthInterceptor, scopeForMethod } from "../../src/auth/interceptor.js";
import { createTokenVerifier, remoteKeys } from "../../src/auth/verifier.js";
import { productionIds } from "../../src/ledger/ids.js";
import { createLedger } from "../../src/ledger/ledger.js";
import { createErrorShield } from "../../src/rpc/error-shield.js";
import { createServiceImpl } from "../../src/rpc/service.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { runGrpcLoad } from "../grpc-load.js";
import { cpuSecondsOf } from "../proc.js";
import { BENCH_ACCOUNT, BENCH_ACTOR, type DatasetInfo } from "../seed.js";
import { AUDIENCE, startIssuer } from "../tokens.js";

type Kind = "bare" | "busy" | "connect";

/** What the service costs per GetSource call on one core (docs/benchmarks.md, issue 13), spent here as a busy wait. */
const BUSY_MICROS = 170;

function serve(kind: Kind): void {
  let handler: (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;
  if (kind === "bare" || kind === "busy") {
    // The load client decodes its first answer and checks the id, so the answer is a real message.
    const message = toBinary(
      GetSourceResponseSchema,
      create(GetSourceResponseSchema, { source: { id: process.env.FIRST_ID, altId: "x".repeat(3_000) } }),
    );
    const frame = Buffer.alloc(5 + message.length);
    frame.writeUInt32BE(message.length, 1);
    frame.set(message, 5);
    const answer = (res: http2.Http2ServerResponse) => {
      if (kind === "busy") {
        const until = performance.now() + BUSY_MICROS / 1000;
        while (performance.now() < until);
      }
      res.writeHead(200, { "content-type": "application/grpc+proto" });
      res.addTrailers({ "grpc-status": "0" });
      res.end(frame);
    };
    // PACE=n: at most n answers per event-loop turn, the rest queued, so that each turn's answers
    // are flushed to the socket before the next are worked on.
    const pace = Number.parseInt(process.env.PACE ?? "0", 10) || 0;
    const queue: http2.Http2ServerResponse[] = [];
    const drain = () => {
      for (let i = 0; i < pace && queue.length > 0; i++) answer(queue.shift() as http2.Http2ServerResponse);
      if (queue.length > 0) setImmediate(drain);
    };
    handler = (req, res) => {
      req.resume();
      req.on("end", () => {
        if (pace === 0) return answer(res);
        queue.push(res);
        if (queue.length === 1) setImmediate(drain);
      });
    };
  } else {
    const issuer = process.env.ISSUER as string;
    const verify = createTokenVerifier({
      issuer,
      audience: AUDIENCE,
      keys: remoteKeys(`${issuer}.well-known/jwks.json`),
    });
    const store = openSqliteStore({ path: process.env.SQLITE_PATH as string });
    const secret = new Uint8Array(32);
    const service = createServiceImpl(
      createLedger({ environment: "production", store, newId: productionIds(), secret }),
    );
    handler = connectNodeAdapter({
      routes: (router) => router.service(SourceLedgerService, service),
      interceptors: [
        createErrorShield({ error() {} }),
        createAuthInterceptor({ verify, requiredScope: scopeForMethod }),
      ],
      compressMinBytes: 64 * 1024,
    });
  }
  const server = http2.createServer(handler);
  if (process.env.NO_DELAY) server.on("connection", (socket: import("node:net").Socket) => socket.setNoDelay(true));
  server.listen(0, "127.0.0.1", () => process.send?.({ port: (server.address() as AddressInfo).port }));
  process.once("disconnect", () => process.exit(0));
}

async function measure(ledger: string): Promise<void> {
  const info = JSON.parse(readFileSync(`${ledger}.json`, "utf8")) as DatasetInfo;
  const issuer = await startIssuer("RS256");
  const token = await issuer.token({ accountId: BENCH_ACCOUNT, actor: BENCH_ACTOR });
  const kinds = (process.argv[3]?.split(",") ?? ["bare", "busy", "connect"]) as Kind[];
  for (const kind of kinds) {
    const child = fork(fileURLToPath(import.meta.url), [], {
      execArgv: ["--import", "tsx"],
      env: { ...process.env, CEILING_SERVER: kind, SQLITE_PATH: ledger, ISSUER: issuer.issuer, FIRST_ID: info.ids[0] },
    });
    const port = await new Promise<number>((resolve) =>
      child.once("message", (m: { port: number }) => resolve(m.port)),
    );
    const ids = kind === "connect" ? info.ids : [info.ids[0]];
    const load = (seconds: number) =>
      runGrpcLoad({
        client: "h2",
        port,
        token,
        ids,
        concurrency: 50,
        connections: 1,
        duration: seconds,
        acceptCompression: true,
      });
    await load(1);
    for (let run = 0; run < 3; run++) {
      const before = cpuSecondsOf(child.pid as number);
      const result = await load(3);
      const cores = (cpuSecondsOf(child.pid as number) - before) / result.seconds;
      process.stdout.write(
        `${kind}: ${Math.round(result.rps).toLocaleString("en-US")} calls/s, p99 ${result.p99.toFixed(1)} ms, server ${cores.toFixed(2)} cores, failed ${result.failed}\n`,
      );
    }
    child.disconnect();
    await new Promise((resolve) => child.once("exit", resolve));
  }
  await issuer.close();
}

const kind = process.env.CEILING_SERVER as Kind | undefined;
if (kind) {
  serve(kind);
} else {
  const ledger = process.argv[2];
  if (!ledger) {
    process.stderr.write("usage: node --import tsx bench/experiments/grpc-ceilings.ts <ledger.sqlite>\n");
    process.exit(2);
  }
  await measure(ledger);
  process.exit(0);
}
