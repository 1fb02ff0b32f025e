/**
 * Scenario 5's load clients for SourceLedgerService.GetSource over h2c (HTTP/2 with prior
 * knowledge) on the service's one port. A closed loop: `concurrency` calls are always in flight
 * (each finished call starts the next) for a fixed duration, multiplexed over `connections`
 * HTTP/2 connections.
 *
 * - "frames": a gRPC client writing HTTP/2 frames itself (h2-frames.ts), as cheap to run as
 *   autocannon is for REST: the server is what is measured. Every answer's trailers are decoded
 *   and its grpc-status checked; one call's answer is decoded with the generated schema first.
 * - "h2": a minimal gRPC client on node:http2: pre-encoded length-prefixed GetSourceRequest
 *   frames, the response read and dropped, `grpc-status` checked. Like autocannon for HTTP/1.1 it
 *   costs the load generator little, so the server is what is measured. One call is decoded with
 *   the generated schema first, to prove the answers are real.
 * - "connect": Connect's gRPC transport (@connectrpc/connect-node), what a Node client would use.
 *   It decodes every response, which costs the bench process about as much CPU as the server
 *   spends answering, so on two cores it caps the rate it can drive.
 *
 * Both advertise `grpc-accept-encoding: gzip` by default, as Connect's and grpc-js's clients do,
 * so the server compresses answers over its compressMinBytes (64 KiB); `acceptCompression: false`
 * leaves the header out.
 */

import http2 from "node:http2";
import net from "node:net";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  GetSourceRequestSchema,
  GetSourceResponseSchema,
  ListSourcesRequestSchema,
  ListSourcesResponseSchema,
  SourceLedgerService,
} from "../gen/sourceledger/v2/source_ledger_pb.js";
import { FrameConnection } from "./h2-frames.js";
import { constantHeaderBlocks } from "./hpack.js";
import type { LoadResult } from "./http-load.js";

export interface GrpcLoad {
  client: "frames" | "h2" | "connect";
  port: number;
  token: string;
  ids: readonly string[];
  concurrency: number;
  connections: number;
  /** Seconds. */
  duration: number;
  /** Advertise gzip in grpc-accept-encoding (default true, like Connect's and grpc-js's clients). */
  acceptCompression?: boolean;
  /** GetSource of each id in turn (default), or ListSources of the first page of `listLimit`. */
  method?: "get" | "list";
  listLimit?: number;
  /**
   * h2 and frames clients: each connection's and stream's receive window in bytes (grpc-js's channel option
   * `grpc-node.flow_control_window`); HTTP/2's 65,535 when absent, as grpc-js keeps it by default.
   */
  windowBytes?: number;
}

const GET_SOURCE_PATH = `/${SourceLedgerService.typeName}/${SourceLedgerService.method.getSource.name}`;
const LIST_SOURCES_PATH = `/${SourceLedgerService.typeName}/${SourceLedgerService.method.listSources.name}`;

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** How long after its duration a load waits for calls still in flight before counting them failed. */
const STRAGGLER_MS = 10_000;

/**
 * Runs `call` from `concurrency` loops until the deadline; collects latencies and outcomes. A loop
 * whose connection is `lost` after a failed call ends there: its calls would fail at once, and
 * one after another they would hold the event loop from the other connections' reads and timers.
 */
async function closedLoop(
  load: GrpcLoad,
  call: (i: number, connection: number) => Promise<string>,
  lost: (connection: number) => boolean = () => false,
): Promise<LoadResult> {
  const latencies: number[] = [];
  const statusCodes: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  let next = 0;
  const started = performance.now();
  const deadline = started + load.duration * 1000;
  // Set once the result is taken: calls settled after it (closed with the connections) count no more.
  let over = false;
  const loop = async (worker: number) => {
    const connection = worker % load.connections;
    while (!over && performance.now() < deadline) {
      const i = next++;
      const t0 = performance.now();
      let outcome: string;
      try {
        outcome = await call(i, connection);
      } catch (error) {
        outcome = String(error).slice(0, 80);
      }
      if (over) return;
      statusCodes[outcome] = (statusCodes[outcome] ?? 0) + 1;
      if (outcome === "0") {
        latencies.push(performance.now() - t0);
        ok += 1;
      } else {
        failed += 1;
        if (lost(connection)) return;
      }
    }
  };
  const loops = Promise.all(Array.from({ length: load.concurrency }, (_, worker) => loop(worker)));
  // Calls the server never answers are counted as failed once the load is over, not waited for.
  let stragglerTimer: NodeJS.Timeout | undefined;
  const stragglers = new Promise<"late">((resolve) => {
    stragglerTimer = setTimeout(() => resolve("late"), load.duration * 1000 + STRAGGLER_MS);
  });
  const late = (await Promise.race([loops, stragglers])) === "late";
  over = true;
  if (late) {
    const unanswered = next - (ok + failed);
    failed += unanswered;
    statusCodes[`unanswered ${STRAGGLER_MS / 1000} s after the load`] = unanswered;
  }
  clearTimeout(stragglerTimer);
  const seconds = (performance.now() - started) / 1000;
  const sorted = Float64Array.from(latencies).sort();
  return {
    rps: ok / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
    ok,
    failed,
    statusCodes,
    seconds,
  };
}

/** Throws unless a call's answer is status 0 with the page or the source the load asked for. */
function checkAnswer(load: GrpcLoad, status: string, chunks: Buffer[]): void {
  const body = Buffer.concat(chunks);
  if (status !== "0" || body.length < 5) throw new Error(`gRPC check failed: status ${status}, ${body.length} bytes`);
  const payload = body.subarray(5, 5 + body.readUInt32BE(1));
  const bytes = body[0] === 1 ? gunzipSync(payload) : payload;
  if (load.method === "list") {
    const page = fromBinary(ListSourcesResponseSchema, bytes);
    if (page.sources.length !== (load.listLimit ?? 100)) {
      throw new Error(`gRPC ListSources check failed: ${page.sources.length} sources`);
    }
  } else {
    const response = fromBinary(GetSourceResponseSchema, bytes);
    if (response.source?.id !== load.ids[0]) throw new Error(`gRPC GetSource check failed: id ${response.source?.id}`);
  }
}

/** The request messages of a load: one ListSources page, or a GetSource of each id in turn. */
function requestFrames(load: GrpcLoad): Buffer[] {
  return load.method === "list"
    ? [envelope(toBinary(ListSourcesRequestSchema, create(ListSourcesRequestSchema, { limit: load.listLimit ?? 100 })))]
    : load.ids.slice(0, 20_000).map(requestFrame);
}

async function runFrames(load: GrpcLoad): Promise<LoadResult> {
  const connections = await Promise.all(
    Array.from({ length: load.connections }, () =>
      FrameConnection.connect({ port: load.port, windowBytes: load.windowBytes }),
    ),
  );
  // Indexed once, then referred to.
  const blocks = constantHeaderBlocks(requestHeaders(load));
  const frames = requestFrames(load);
  try {
    for (const connection of connections) {
      const chunks: Buffer[] = [];
      checkAnswer(load, await connection.call(blocks.first, frames[0], chunks), chunks);
    }
    return await closedLoop(
      load,
      (i, connection) => connections[connection].call(blocks.next, frames[i % frames.length]),
      (connection) => connections[connection].lost !== null,
    );
  } finally {
    for (const connection of connections) connection.close();
  }
}

/** A call's header fields, as Node's client sends them (pseudo-headers first), for both HTTP/2 clients. */
function requestHeaders(load: GrpcLoad): [string, string][] {
  return [
    [":method", "POST"],
    [":scheme", "http"],
    [":authority", `127.0.0.1:${load.port}`],
    [":path", load.method === "list" ? LIST_SOURCES_PATH : GET_SOURCE_PATH],
    ["content-type", "application/grpc+proto"],
    ["te", "trailers"],
    ["authorization", `Bearer ${load.token}`],
    ...(load.acceptCompression === false ? [] : [["grpc-accept-encoding", "gzip"] as [string, string]]),
  ];
}

function requestFrame(id: string): Buffer {
  return envelope(toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id })));
}

function envelope(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

async function runH2(load: GrpcLoad): Promise<LoadResult> {
  const sessions = await Promise.all(
    Array.from(
      { length: load.connections },
      () =>
        new Promise<http2.ClientHttp2Session>((resolve, reject) => {
          // As grpc-js connects (transport.js): Nagle off on its socket.
          const window = load.windowBytes;
          const session = http2.connect(`http://127.0.0.1:${load.port}`, {
            createConnection: () => net.connect({ host: "127.0.0.1", port: load.port, noDelay: true }),
            // As grpc-js applies its flow_control_window: the streams' initial window, then the connection's.
            ...(window === undefined ? {} : { settings: { initialWindowSize: window } }),
          });
          session.once("connect", () => {
            if (window !== undefined) session.setLocalWindowSize(window);
            resolve(session);
          });
          session.once("error", reject);
        }),
    ),
  );
  const headers: http2.OutgoingHttpHeaders = Object.fromEntries(requestHeaders(load));
  const frames = requestFrames(load);
  const call = (i: number, connection: number, keep?: Buffer[]) =>
    new Promise<string>((resolve, reject) => {
      const stream = sessions[connection].request(headers);
      let status: string | undefined;
      stream.on("response", (h) => {
        if (h["grpc-status"] !== undefined) status = String(h["grpc-status"]); // trailers-only answer
      });
      stream.on("trailers", (t) => {
        status = String(t["grpc-status"]);
      });
      stream.on("data", (chunk: Buffer) => keep?.push(chunk));
      stream.on("error", reject);
      stream.on("close", () => resolve(status ?? `closed ${stream.rstCode}`));
      stream.end(frames[i % frames.length]);
    });
  try {
    // One real answer, decoded: the load below only checks grpc-status.
    const chunks: Buffer[] = [];
    checkAnswer(load, await call(0, 0, chunks), chunks);
    return await closedLoop(
      load,
      (i, connection) => call(i, connection),
      (connection) => sessions[connection].closed || sessions[connection].destroyed,
    );
  } finally {
    for (const session of sessions) session.close();
  }
}

async function runConnect(load: GrpcLoad): Promise<LoadResult> {
  const baseUrl = `http://127.0.0.1:${load.port}`;
  const managers = Array.from({ length: load.connections }, () => new Http2SessionManager(baseUrl));
  const clients: Client<typeof SourceLedgerService>[] = managers.map((sessionManager) =>
    createClient(
      SourceLedgerService,
      createGrpcTransport({
        baseUrl,
        sessionManager,
        ...(load.acceptCompression === false ? { acceptCompression: [] } : {}),
      }),
    ),
  );
  const headers = { authorization: `Bearer ${load.token}` };
  try {
    await Promise.all(clients.map((client) => client.getSource({ id: load.ids[0] }, { headers })));
    return await closedLoop(load, async (i, connection) => {
      const id = load.ids[i % load.ids.length];
      const response = await clients[connection].getSource({ id }, { headers });
      return response.source?.id === id ? "0" : `wrong source ${response.source?.id}`;
    });
  } finally {
    for (const manager of managers) manager.abort();
  }
}

export function runGrpcLoad(load: GrpcLoad): Promise<LoadResult> {
  if (load.client === "frames") return runFrames(load);
  return load.client === "h2" ? runH2(load) : runConnect(load);
}
