/**
 * A search or list page that reads on over several turns (docs/api.md §13) stops reading once
 * nobody waits for it: the client went away (REST, Connect, gRPC cancelling its call) or the call's
 * gRPC deadline passed; a bbox list is asked over gRPC, REST and the OGC API's items. Seen from
 * outside through /metrics, which counts the store's list reads: without the signal a page over
 * this account reads READ_ON_TURNS times whatever the client does.
 *
 * The server runs in this process: the test's client, its /metrics polls and the server's reads
 * share one event loop, so the client's stop and the server seeing it each wait for a turn of ~0.1 s
 * (a closed HTTP/1.1 connection two or three). Hence "fewer than READ_ON_TURNS", not "one".
 *
 * The account: 2 × READ_ON_TURNS + 1 sources of 100,000 positions inside a square "donut" area's
 * hole (each read of the store tests two of them and stops), then one source on the donut; for
 * lists, as many annuli of 100,000 positions around a box they never meet, each in a year of its
 * own (so creating them tests no pair for a conflict).
 */

import { setTimeout as sleep } from "node:timers/promises";
import { create, fromJson, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GeometrySchema, SearchSourcesRequestSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { READ_ON_TURNS } from "../../src/model/exact-tests.js";
import { metricValue, scrape } from "../support/metrics.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";
import {
  annulusAround,
  createAll,
  decoyInHole,
  donutAt,
  featureOf,
  protoBox,
  protoGeometry,
  rect,
} from "./paging-support.js";

const [X, Y] = [120, 30];
const DONUT = donutAt(X, Y);
const SEARCH_PATH = "/sourceledger.v2.SourceLedgerService/SearchSources";
/** A box every annulus around (LX, LY) holds and none meets. */
const [LX, LY] = [-60, -30];
const BOX: [number, number, number, number] = [LX - 0.1, LY - 0.1, LX + 0.1, LY + 0.1];

let server: TestServer;
let client: LedgerGrpc;
let token: string;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
  token = await server.userToken("acct-search-cancel");
  const decoys = Array.from({ length: 2 * READ_ON_TURNS + 1 }, (_, i) =>
    featureOf(`cancel-decoy-${i}`, decoyInHole(X, Y, i)),
  );
  await createAll(server, token, decoys, "production", 3);
  await createAll(server, token, [featureOf("cancel-ring", rect(X + 19.5, Y + 5, X + 19.7, Y + 5.2))]);
  const annuli = Array.from({ length: 2 * READ_ON_TURNS + 1 }, (_, i) =>
    featureOf(`cancel-annulus-${i}`, annulusAround(LX, LY, i), {
      start_at: `${2000 + i}-01-01T00:00:00Z`,
      end_at: `${2000 + i}-12-31T00:00:00Z`,
    }),
  );
  await createAll(server, token, annuli, "production", 3);
}, 300_000);

afterAll(async () => {
  client?.close();
  await server?.close();
});

/** How many list reads the production store has answered. */
async function listReads(): Promise<number> {
  const labels = { store: "production", operation: "list", outcome: "ok" };
  return metricValue(await scrape(server), "source_ledger_store_operation_duration_seconds_count", labels);
}

/** The store's list reads once they stop growing: no new read for 600 ms (a read here takes ~0.1 s). */
async function settledReads(): Promise<number> {
  let reads = await listReads();
  for (let last = -1; reads !== last; ) {
    last = reads;
    await sleep(600);
    reads = await listReads();
  }
  return reads;
}

/**
 * Starts a page (a search or a list) with `start`, calls `stop` once the server has read the store
 * for it once, then waits until the reads stop growing; returns how many the page made.
 */
async function readsOfAbandonedPage(start: () => Promise<unknown>, stop: () => void): Promise<number> {
  const before = await listReads();
  const answered = start().catch(() => undefined);
  let reads = before;
  for (let waited = 0; reads === before; waited += 5) {
    expect(waited, "the page never read the store").toBeLessThan(10_000);
    await sleep(5);
    reads = await listReads();
  }
  stop();
  const settled = await settledReads();
  await answered;
  return settled - before;
}

/** A grpc-js call of a page method, its outcome's status code, and how to cancel it. */
function grpcPage(
  method: "SearchSources" | "ListSources",
  request: object,
  deadlineMs: number,
): { call: Promise<grpc.status>; cancel: () => void } {
  const metadata = new grpc.Metadata();
  metadata.add("authorization", `Bearer ${token}`);
  const service = client.clients.SourceLedgerService as unknown as Record<string, (...args: unknown[]) => unknown>;
  let cancel = () => {};
  const call = new Promise<grpc.status>((resolve) => {
    const unary = service[method].call(
      service,
      request,
      metadata,
      { deadline: Date.now() + deadlineMs },
      (error: grpc.ServiceError | null) => resolve(error === null ? grpc.status.OK : error.code),
    ) as grpc.ClientUnaryCall;
    cancel = () => unary.cancel();
  });
  return { call, cancel };
}

/** A gRPC page call cancelled after its first read: CANCELLED, and fewer reads than a whole page's. */
async function expectCancelledGrpcReadsLess(method: "SearchSources" | "ListSources", request: object): Promise<void> {
  let call: Promise<grpc.status> = Promise.resolve(grpc.status.UNKNOWN);
  let cancel = () => {};
  const reads = await readsOfAbandonedPage(
    () => {
      ({ call, cancel } = grpcPage(method, request, 60_000));
      return call;
    },
    () => cancel(),
  );
  expect(await call).toBe(grpc.status.CANCELLED);
  expect(reads).toBeGreaterThanOrEqual(1);
  expect(reads).toBeLessThan(READ_ON_TURNS);
}

/** The reads of a call answered once its deadline passed, and the call's answer. */
async function readsPastDeadline<T>(call: () => Promise<T>): Promise<{ reads: number; answer: T }> {
  const before = await listReads();
  const answer = await call();
  return { reads: (await settledReads()) - before, answer };
}

/** A gRPC page call whose 150 ms deadline passes: DEADLINE_EXCEEDED, and fewer reads than a whole page's. */
async function expectGrpcDeadlineReadsLess(method: "SearchSources" | "ListSources", request: object): Promise<void> {
  const { reads, answer } = await readsPastDeadline(() => grpcPage(method, request, 150).call);
  expect(answer).toBe(grpc.status.DEADLINE_EXCEEDED);
  expect(reads).toBeGreaterThanOrEqual(1);
  expect(reads).toBeLessThan(READ_ON_TURNS);
}

describe("a search page whose caller is gone reads no further", () => {
  it("the whole page, for reference: READ_ON_TURNS reads, answered empty", async () => {
    const before = await listReads();
    const res = await server.request("POST", "/sources/search", { token, json: { intersects: DONUT, limit: 10 } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect((await listReads()) - before).toBe(READ_ON_TURNS);
  });

  it("REST: the client closes its connection after the first read", async () => {
    const abort = new AbortController();
    const reads = await readsOfAbandonedPage(
      () =>
        fetch(`${server.baseUrl}/sources/search`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ intersects: DONUT, limit: 10 }),
          signal: abort.signal,
        }),
      () => abort.abort(),
    );
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThan(READ_ON_TURNS);
  });

  it("Connect: the client closes its connection after the first read", async () => {
    const abort = new AbortController();
    const reads = await readsOfAbandonedPage(
      () =>
        fetch(`${server.baseUrl}${SEARCH_PATH}`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ geometry: protoGeometry(DONUT), query: { limit: 10 } }),
          signal: abort.signal,
        }),
      () => abort.abort(),
    );
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThan(READ_ON_TURNS);
  });

  const SEARCH = { geometry: protoGeometry(DONUT), query: { limit: 10 } };

  it("gRPC: the client cancels its call after the first read", async () => {
    await expectCancelledGrpcReadsLess("SearchSources", SEARCH);
  });

  it("Connect: the call's timeout passes: deadline_exceeded, not an empty page answered OK, and no further reads", async () => {
    const { reads, answer } = await readsPastDeadline(async () => {
      const res = await fetch(`${server.baseUrl}${SEARCH_PATH}`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "connect-timeout-ms": "150" },
        body: JSON.stringify({ geometry: protoGeometry(DONUT), query: { limit: 10 } }),
      });
      return { status: res.status, body: (await res.json()) as { code?: string } };
    });
    expect(answer.body.code).toBe("deadline_exceeded");
    expect(answer.status).not.toBe(200);
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThan(READ_ON_TURNS);
  });

  it("gRPC-Web: grpc-timeout passes: grpc-status 4 in the trailers, and no further reads", async () => {
    const { reads, answer } = await readsPastDeadline(async () => {
      const message = create(SearchSourcesRequestSchema, {
        intersects: { case: "geometry", value: fromJson(GeometrySchema, protoGeometry(DONUT) as JsonValue) },
        query: { limit: 10 },
      });
      const res = await fetch(`${server.baseUrl}${SEARCH_PATH}`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/grpc-web+proto",
          "grpc-timeout": "150m",
        },
        body: new Uint8Array(encodeEnvelope(0, toBinary(SearchSourcesRequestSchema, message))),
      });
      return Buffer.from(await res.arrayBuffer()).toString("latin1");
    });
    expect(answer).toContain("grpc-status: 4\r\n");
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThan(READ_ON_TURNS);
  });

  it("gRPC: the call's deadline passes (DEADLINE_EXCEEDED), and the page reads no further", async () => {
    await expectGrpcDeadlineReadsLess("SearchSources", SEARCH);
  });
});

describe("a bbox list page whose caller is gone reads no further", () => {
  it("the whole page, for reference: READ_ON_TURNS reads, answered empty", async () => {
    const before = await listReads();
    const res = await server.request("GET", `/sources?bbox=${BOX.join(",")}&limit=10`, { token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect((await listReads()) - before).toBe(READ_ON_TURNS);
  });

  const LIST = { bbox: protoBox(BOX), limit: 10 };

  it("gRPC: the client cancels its call after the first read", async () => {
    await expectCancelledGrpcReadsLess("ListSources", LIST);
  });

  it("gRPC: the call's deadline passes (DEADLINE_EXCEEDED), and the page reads no further", async () => {
    await expectGrpcDeadlineReadsLess("ListSources", LIST);
  });

  it.each([
    ["REST", `/sources?bbox=${BOX.join(",")}&limit=10`],
    ["OGC API items", `/ogc/collections/sources/items?bbox=${BOX.join(",")}&limit=10`],
  ])("%s: the client closes its connection after the first read", async (_, path) => {
    const abort = new AbortController();
    const reads = await readsOfAbandonedPage(
      () => fetch(`${server.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal }),
      () => abort.abort(),
    );
    expect(reads).toBeGreaterThanOrEqual(1);
    expect(reads).toBeLessThan(READ_ON_TURNS);
  });
});
