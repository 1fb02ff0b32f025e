/**
 * Issue 13's acceptance: the lean unary gRPC path (rpc/grpc-unary.ts) answers exactly as Connect's
 * gRPC handler does. Two servers share ONE SQLite file (so they hold the same records and the same
 * page-token key): one with the lean path, one with GRPC_LEAN_PATH=off (every call on Connect's
 * adapter). Every case runs against both and compares what the client saw — raw HTTP/2 (headers,
 * trailers, body bytes), @grpc/grpc-js, Connect's Node client (gRPC and Connect protocols), and
 * `buf curl` with reflection — and asserts the specific outcome too, so a case cannot pass by
 * both paths being wrong alike. The Python client runs against both in python-client.test.ts.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { request as httpRequest } from "node:http";
import http2 from "node:http2";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { brotliCompressSync, brotliDecompressSync, gunzipSync, gzipSync, constants as zlibConstants } from "node:zlib";
import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CreateSourcesRequestSchema,
  DeleteSourceRequestSchema,
  GetSourceRequestSchema,
  ListConflictsRequestSchema,
  ListSourceEventsRequestSchema,
  ListSourcesRequestSchema,
  SearchSourcesRequestSchema,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { MALFORMED_HOST } from "../../src/http/host-check.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { openProductionStore } from "../../src/store/open.js";
import { type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  fieldViolations,
  grpc,
  LedgerGrpc,
  type ServiceName,
  sourceInput,
  ts,
  type UnaryOutcome,
  uniqueAlt,
} from "./grpc-support.js";

const run = promisify(execFile);
const BUF = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "buf");
const PATHS = ["lean", "connect"] as const;
type PathName = (typeof PATHS)[number];
const PRODUCTION = "/sourceledger.v2.SourceLedgerService";

const servers = {} as Record<PathName, TestServer>;
const tokens = {} as Record<PathName, string>;
const clients = {} as Record<PathName, LedgerGrpc>;
let dir: string;
/** Records both servers read: created once, through the lean server. */
let fixtureIds: string[] = [];
let bigId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-lean-matrix-"));
  const shared = { SQLITE_PATH: join(dir, "shared.sqlite") };
  servers.lean = await startTestServer(shared);
  servers.connect = await startTestServer({ ...shared, GRPC_LEAN_PATH: "off" });
  for (const path of PATHS) {
    tokens[path] = await servers[path].token();
    clients[path] = new LedgerGrpc(servers[path].port);
  }
  const created = await clients.lean.ok(
    "SourceLedgerService",
    "CreateSources",
    { sources: [sourceInput(uniqueAlt("m-a")), sourceInput(uniqueAlt("m-b")), sourceInput(uniqueAlt("m-c"))] },
    tokens.lean,
  );
  fixtureIds = created.sources.map((source: { id: string }) => source.id);
  // A record whose answer spans many HTTP/2 DATA frames (~320 KB, twenty times the initial flow-control window): for resets mid-answer.
  const big = await clients.lean.ok(
    "SourceLedgerService",
    "CreateSources",
    {
      sources: [sourceInput(uniqueAlt("m-big"), { geometry: { polygon: { rings: [circle(10, -60, 0.5, 20_000)] } } })],
    },
    tokens.lean,
  );
  bigId = big.sources[0].id;
}, 120_000);

afterAll(async () => {
  for (const path of PATHS) {
    clients[path]?.close();
    await servers[path]?.close();
  }
  rmSync(dir, { recursive: true, force: true });
});

/** A closed ring of `n` positions around (lon, lat), packed lon/lat. */
function circle(lon: number, lat: number, radius: number, n: number): { coordinates: number[] } {
  const coordinates: number[] = [];
  for (let i = 0; i < n; i++) {
    const angle = (-2 * Math.PI * i) / n;
    coordinates.push(lon + radius * Math.cos(angle), lat + radius * Math.sin(angle));
  }
  coordinates.push(coordinates[0], coordinates[1]);
  return { coordinates };
}

// --- raw HTTP/2: every header, trailer and body byte ---

interface RawAnswer {
  headers: Record<string, unknown>;
  trailers: Record<string, unknown> | undefined;
  body: Buffer;
  rstCode: number | undefined;
}

function envelope(message: Uint8Array, flags = 0): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame[0] = flags;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

function encoded<D extends DescMessage>(schema: D, init: MessageInitShape<D>): Buffer {
  return envelope(toBinary(schema, create(schema, init)));
}

/** One raw call; `date` is dropped and a generated request id replaced, the rest kept as sent. */
function rawCall(
  path: PathName,
  rpcPath: string,
  body: Buffer | undefined,
  headers: Record<string, string> = {},
  token: string | null = tokens[path],
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(`http://127.0.0.1:${servers[path].port}`);
    session.on("error", reject);
    const request = session.request({
      ":method": "POST",
      ":path": rpcPath,
      "content-type": "application/grpc",
      te: "trailers",
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...headers,
    });
    const answer: RawAnswer = { headers: {}, trailers: undefined, body: Buffer.alloc(0), rstCode: undefined };
    const chunks: Buffer[] = [];
    request.on("response", (h) => {
      answer.headers = normalised(h);
    });
    request.on("trailers", (t) => {
      answer.trailers = normalised(t);
    });
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("error", () => {});
    request.on("close", () => {
      answer.body = Buffer.concat(chunks);
      // Problem details name the generated request id (`instance`).
      if (String(answer.headers["content-type"]).startsWith("application/problem+json")) {
        answer.body = Buffer.from(
          answer.body.toString().replace(/urn:request:[0-9a-f-]{36}/, "urn:request:<generated>"),
        );
      }
      answer.rstCode = request.rstCode;
      session.close();
      resolve(answer);
    });
    request.end(body);
  });
}

function normalised(fields: http2.IncomingHttpHeaders): Record<string, unknown> {
  const { date: _date, ...rest } = Object.fromEntries(Object.entries(fields));
  const id = rest["x-request-id"];
  if (typeof id === "string" && /^[0-9a-f-]{36}$/.test(id)) rest["x-request-id"] = "<generated>";
  return rest;
}

/** The same raw call on both paths: they must agree; the lean path's answer is returned for checks. */
async function bothRaw(
  rpcPath: string,
  body: (path: PathName) => Buffer | undefined,
  headers: Record<string, string> = {},
  token: (path: PathName) => string | null = (path) => tokens[path],
): Promise<RawAnswer> {
  const lean = await rawCall("lean", rpcPath, body("lean"), headers, token("lean"));
  const connect = await rawCall("connect", rpcPath, body("connect"), headers, token("connect"));
  expect(lean).toEqual(connect);
  return lean;
}

const same = (bytes: Buffer) => () => bytes;

describe("raw HTTP/2: the lean path and Connect's answer byte for byte alike", () => {
  it("every read method, with and without gzip accepted, application/grpc and +proto", async () => {
    const requests: [string, Buffer][] = [
      ["GetSource", encoded(GetSourceRequestSchema, { id: fixtureIds[0] })],
      ["ListSources", encoded(ListSourcesRequestSchema, { limit: 100 })],
      ["ListSources", encoded(ListSourcesRequestSchema, { limit: 2 })],
      [
        "SearchSources",
        encoded(SearchSourcesRequestSchema, {
          intersects: { case: "box", value: { minLon: -180, minLat: -90, maxLon: 180, maxLat: 90 } },
        }),
      ],
      ["ListSourceEvents", encoded(ListSourceEventsRequestSchema, { id: fixtureIds[1] })],
      ["ListConflicts", encoded(ListConflictsRequestSchema, { id: fixtureIds[2] })],
    ];
    for (const [method, body] of requests) {
      const variants: Record<string, string>[] = [
        {},
        { "grpc-accept-encoding": "gzip" },
        { "content-type": "application/grpc+proto" },
      ];
      for (const headers of variants) {
        const answer = await bothRaw(`${PRODUCTION}/${method}`, same(body), headers);
        expect(answer.headers[":status"]).toBe(200);
        expect(answer.headers["content-type"]).toBe("application/grpc+proto");
        expect(answer.trailers).toEqual({ "grpc-status": "0" });
        expect(answer.body.length).toBeGreaterThanOrEqual(5);
      }
    }
    // A page of two names the next one: the same token from both (one key, one binding).
    const page = await bothRaw(`${PRODUCTION}/ListSources`, same(encoded(ListSourcesRequestSchema, { limit: 2 })));
    expect(page.body.length).toBeGreaterThan(100);
  }, 120_000);

  it("gRPC answers are compressed only in the encoding the request names, if listed; gRPC-Web keeps the client's list", async () => {
    const request = toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id: bigId }));
    // Listing gzip (as every gRPC client does) asks for nothing: the large answer leaves as it is.
    const listed = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(request, 0)), {
      "grpc-accept-encoding": "identity,deflate,gzip",
    });
    expect(listed.headers["grpc-encoding"]).toBeUndefined();
    expect(listed.body[0]).toBe(0);
    expect(listed.body.length).toBeGreaterThan(300_000);
    const plain = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(request, 0)));
    expect(plain.headers["grpc-encoding"]).toBeUndefined();
    expect(plain.body).toEqual(listed.body);
    // A gzip request: the answer in gzip, with or without the client listing it; a small one
    // flagged uncompressed. A list that leaves gzip out gets the answer uncompressed.
    for (const list of [{}, { "grpc-accept-encoding": "identity,deflate,gzip" }] as Record<string, string>[]) {
      const gzipped = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(request), 1)), {
        "grpc-encoding": "gzip",
        ...list,
      });
      expect(gzipped.headers["grpc-encoding"]).toBe("gzip");
      expect(gzipped.body[0]).toBe(1);
      expect(gunzipSync(gzipped.body.subarray(5))).toEqual(plain.body.subarray(5));
    }
    const unlisted = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(request), 1)), {
      "grpc-encoding": "gzip",
      "grpc-accept-encoding": "br",
    });
    expect(unlisted.headers["grpc-encoding"]).toBeUndefined();
    expect(unlisted.body).toEqual(plain.body);
    // A request naming gzip with its message uncompressed (Connect's sendCompression under 1 KiB) counts as gzip.
    const named = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(request, 0)), { "grpc-encoding": "gzip" });
    expect(named.headers["grpc-encoding"]).toBe("gzip");
    expect(named.body[0]).toBe(1);
    // gRPC-Web (browsers, callers outside) keeps the client's list: gzip listed, gzip answered.
    for (const path of PATHS) {
      const web = await fetch(`${servers[path].baseUrl}${PRODUCTION}/GetSource`, {
        method: "POST",
        headers: {
          "content-type": "application/grpc-web+proto",
          "grpc-accept-encoding": "gzip",
          authorization: `Bearer ${tokens[path]}`,
        },
        body: new Uint8Array(envelope(request, 0)),
      });
      const body = Buffer.from(await web.arrayBuffer());
      expect([web.status, web.headers.get("grpc-encoding"), body[0]]).toEqual([200, "gzip", 1]);
      expect(gunzipSync(body.subarray(5, 5 + body.readUInt32BE(1)))).toEqual(plain.body.subarray(5));
    }
    const small = toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id: fixtureIds[0] }));
    const smallGzipped = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(small), 1)), {
      "grpc-encoding": "gzip",
    });
    expect(smallGzipped.headers["grpc-encoding"]).toBe("gzip");
    expect(smallGzipped.body[0]).toBe(0);
  });

  it("large answers are compressed at the fast end of each encoder: gzip level 1, br quality 4", async () => {
    const message = toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id: bigId }));
    const plain = (await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(message, 0)))).body.subarray(5);
    const gzipped = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(message), 1)), {
      "grpc-encoding": "gzip",
    });
    expect(gzipped.headers["grpc-encoding"]).toBe("gzip");
    expect(gzipped.body.subarray(5)).toEqual(gzipSync(plain, { level: 1 }));
    // A br request: br answers, not connect-node's quality 11 (0.2–0.8 s a page).
    const brotli = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(brotliCompressSync(message), 1)), {
      "grpc-encoding": "br",
    });
    expect(brotli.headers["grpc-encoding"]).toBe("br");
    expect(brotli.body[0]).toBe(1);
    const quality4 = brotliCompressSync(plain, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } });
    expect(brotli.body.subarray(5)).toEqual(quality4);
    expect(brotliDecompressSync(brotli.body.subarray(5))).toEqual(plain);
  });

  it("gzip- and br-compressed requests are read; an unknown encoding is unimplemented, naming the known ones", async () => {
    const request = toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id: fixtureIds[0] }));
    const gzipped = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(request), 1)), {
      "grpc-encoding": "gzip",
    });
    expect(gzipped.trailers).toEqual({ "grpc-status": "0" });
    expect(gzipped.headers["grpc-encoding"]).toBe("gzip");
    const unknown = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(request, 1)), { "grpc-encoding": "snappy" });
    expect(unknown.trailers).toMatchObject({ "grpc-status": "12", "grpc-accept-encoding": "gzip,br" });
    const unflagged = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(request, 1)));
    expect(unflagged.trailers?.["grpc-status"]).toBe("13");
    // Data that does not decompress is the caller's error (connect-node alone says internal).
    const truncated = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(gzipSync(request).subarray(0, 12), 1)), {
      "grpc-encoding": "gzip",
    });
    expect(truncated.trailers).toMatchObject({
      "grpc-status": "3",
      "grpc-message": encodeURIComponent("the request message is not valid gzip data"),
    });
  });

  it("the Connect protocol: a body that does not decompress is 400 invalid_argument, not 500", async () => {
    for (const path of PATHS) {
      const answer = await fetch(`${servers[path].baseUrl}${PRODUCTION}/GetSource`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokens[path]}`,
          "content-type": "application/json",
          "content-encoding": "br",
        },
        body: brotliCompressSync(JSON.stringify({ id: fixtureIds[0] })).subarray(0, 6),
      });
      expect(answer.status).toBe(400);
      expect(await answer.json()).toEqual({
        code: "invalid_argument",
        message: "the request message is not valid br data",
      });
    }
  });

  it("the Connect protocol compresses large answers at the same settings: br quality 4, gzip level 1, small ones not", async () => {
    // node:http, not fetch: fetch would decompress the body before the test could see its bytes.
    const post = (path: PathName, id: string, acceptEncoding: string) =>
      new Promise<{ status: number; encoding: string | undefined; body: Buffer }>((resolve, reject) => {
        const body = Buffer.from(toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id })));
        const request = httpRequest(
          `${servers[path].baseUrl}${PRODUCTION}/GetSource`,
          {
            method: "POST",
            headers: {
              authorization: `Bearer ${tokens[path]}`,
              "content-type": "application/proto",
              "accept-encoding": acceptEncoding,
            },
          },
          (answer) => {
            const chunks: Buffer[] = [];
            answer.on("data", (chunk: Buffer) => chunks.push(chunk));
            answer.on("end", () =>
              resolve({
                status: answer.statusCode ?? 0,
                encoding: answer.headers["content-encoding"],
                body: Buffer.concat(chunks),
              }),
            );
            answer.on("error", reject);
          },
        );
        request.on("error", reject);
        request.end(body);
      });
    for (const path of PATHS) {
      const plain = await post(path, bigId, "identity");
      expect(plain.status).toBe(200);
      expect(plain.encoding).toBeUndefined();
      expect(plain.body.length).toBeGreaterThan(300_000);
      const brotli = await post(path, bigId, "br");
      expect(brotli.encoding).toBe("br");
      expect(brotli.body).toEqual(
        brotliCompressSync(plain.body, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 4 } }),
      );
      const gzipped = await post(path, bigId, "gzip, br");
      expect(gzipped.encoding).toBe("gzip");
      expect(gzipped.body).toEqual(gzipSync(plain.body, { level: 1 }));
      const small = await post(path, fixtureIds[0], "br, gzip");
      expect(small.status).toBe(200);
      expect(small.encoding).toBeUndefined();
      expect(small.body.length).toBeLessThan(65_536);
    }
  });

  it("every error the ledger produces, with its details and metadata", async () => {
    const notFound = await bothRaw(
      `${PRODUCTION}/GetSource`,
      same(encoded(GetSourceRequestSchema, { id: "src_nope" })),
    );
    expect(notFound.trailers).toMatchObject({ "grpc-status": "5" });

    const invalid = await bothRaw(
      `${PRODUCTION}/CreateSources`,
      same(encoded(CreateSourcesRequestSchema, { sources: [{ altId: "" }] })),
    );
    expect(invalid.trailers?.["grpc-status"]).toBe("3");
    expect(invalid.trailers?.["grpc-status-details-bin"]).toEqual(expect.any(String));

    const missing = await bothRaw(
      `${PRODUCTION}/GetSource`,
      same(encoded(GetSourceRequestSchema, { id: "x" })),
      {},
      () => null,
    );
    expect(missing.trailers).toMatchObject({
      "grpc-status": "16",
      "www-authenticate": expect.stringContaining("Bearer"),
    });
    expect(missing.headers["content-type"]).toBe("application/grpc");

    const scopeless = {
      lean: await servers.lean.token({ scope: "read:sources" }),
      connect: await servers.connect.token({ scope: "read:sources" }),
    };
    const denied = await bothRaw(
      `${PRODUCTION}/DeleteSource`,
      same(encoded(DeleteSourceRequestSchema, { key: { case: "id", value: fixtureIds[0] } })),
      {},
      (path) => scopeless[path],
    );
    expect(denied.trailers).toMatchObject({
      "grpc-status": "7",
      "www-authenticate": expect.stringContaining("insufficient_scope"),
    });

    const altId = (await clients.lean.ok("SourceLedgerService", "GetSource", { id: fixtureIds[0] }, tokens.lean)).source
      .alt_id;
    const taken = await bothRaw(
      `${PRODUCTION}/CreateSources`,
      same(
        encoded(CreateSourcesRequestSchema, {
          sources: [
            {
              altId,
              geometry: {
                kind: { case: "polygon", value: { rings: [{ coordinates: [1, 1, 1.01, 1, 1.01, 1.01, 1, 1] }] } },
              },
              startAt: { seconds: 1704067200n },
              endAt: { seconds: 1735689600n },
            },
          ],
        }),
      ),
    );
    expect(taken.trailers?.["grpc-status"]).toBe("6");

    const garbage = await bothRaw(`${PRODUCTION}/GetSource`, same(envelope(Buffer.from([0xff, 0xff, 0xff]))));
    expect(garbage.trailers).toMatchObject({
      "grpc-status": "3",
      "grpc-message": "the%20request%20message%20is%20not%20valid%20protobuf",
    });
  });

  it("protocol errors: missing, extra and truncated messages, a bad grpc-timeout", async () => {
    const get = encoded(GetSourceRequestSchema, { id: fixtureIds[0] });
    const missing = await bothRaw(`${PRODUCTION}/GetSource`, () => undefined);
    expect(missing.trailers?.["grpc-status"]).toBe("12");
    const extra = await bothRaw(`${PRODUCTION}/GetSource`, same(Buffer.concat([get, get])));
    expect(extra.trailers?.["grpc-status"]).toBe("12");
    const truncated = await bothRaw(`${PRODUCTION}/GetSource`, same(get.subarray(0, get.length - 2)));
    expect(truncated.trailers).toMatchObject({
      "grpc-status": "3",
      "grpc-message": "protocol%20error%3A%20incomplete%20envelope",
    });
    const badTimeout = await bothRaw(`${PRODUCTION}/GetSource`, same(get), { "grpc-timeout": "soon" });
    expect(badTimeout.trailers).toMatchObject({ "grpc-status": "3" });

    // Connect quotes the header whole; a 10,000-character one came back as a 10 KB grpc-message.
    const hugeTimeout = await bothRaw(`${PRODUCTION}/GetSource`, same(get), { "grpc-timeout": "9".repeat(10_000) });
    const message = decodeURIComponent(String(hugeTimeout.trailers?.["grpc-message"] ?? ""));
    expect(hugeTimeout.trailers?.["grpc-status"]).toBe("3");
    expect(message.length).toBe(1_001);
    expect(message.endsWith("9…")).toBe(true);
    const hugeEncoding = await bothRaw(`${PRODUCTION}/GetSource`, same(get), { "grpc-encoding": "x".repeat(10_000) });
    expect(decodeURIComponent(String(hugeEncoding.trailers?.["grpc-message"] ?? "")).length).toBe(1_001);
  });

  it("malformed bodies past the first message: each answered as Connect's split and parse answer it", async () => {
    const get = encoded(GetSourceRequestSchema, { id: fixtureIds[0] });
    const garbage = envelope(Buffer.from([0xff, 0xff, 0xff]));
    const header = (size: number) => {
      const bytes = Buffer.alloc(5);
      bytes.writeUInt32BE(size, 1);
      return bytes;
    };
    const cases: [string, Buffer, Record<string, string>][] = [
      [
        "a message and 2 stray bytes",
        Buffer.concat([get, Buffer.from([0, 0])]),
        { "grpc-status": "3", "grpc-message": encodeURIComponent("protocol error: incomplete envelope") },
      ],
      [
        "two messages that are not protobuf: the first one's error",
        Buffer.concat([garbage, garbage]),
        { "grpc-status": "3", "grpc-message": encodeURIComponent("the request message is not valid protobuf") },
      ],
      [
        "a message, then one that is not protobuf: the second is parsed before it counts as extra",
        Buffer.concat([get, garbage]),
        { "grpc-status": "3", "grpc-message": encodeURIComponent("the request message is not valid protobuf") },
      ],
      [
        "a message, then a header announcing 4 GiB",
        Buffer.concat([get, header(0xffffffff)]),
        {
          "grpc-status": "8",
          "grpc-message": encodeURIComponent("message size 4294967295 is larger than configured readMaxBytes 10485760"),
        },
      ],
      [
        "a message, then a header whose data never comes: the message alone",
        Buffer.concat([get, header(10)]),
        { "grpc-status": "0" },
      ],
      [
        "only a header whose data never comes: no message",
        header(10),
        {
          "grpc-status": "12",
          "grpc-message": encodeURIComponent("protocol error: missing input message for unary method"),
        },
      ],
    ];
    for (const [label, body, trailers] of cases) {
      const answer = await bothRaw(`${PRODUCTION}/GetSource`, same(body));
      expect(answer.trailers, label).toMatchObject(trailers);
    }
  });

  it("oversized messages: announced, and after decompression, are resource_exhausted", async () => {
    const announced = Buffer.alloc(5 + 1024);
    announced.writeUInt32BE(11 * 1024 * 1024, 1);
    const big = await bothRaw(`${PRODUCTION}/CreateSources`, same(announced));
    expect(big.trailers).toMatchObject({
      "grpc-status": "8",
      "grpc-message": encodeURIComponent("message size 11534336 is larger than configured readMaxBytes 10485760"),
    });
    const bomb = gzipSync(Buffer.alloc(12 * 1024 * 1024, 0x0a));
    const inflated = await bothRaw(`${PRODUCTION}/CreateSources`, same(envelope(bomb, 1)), { "grpc-encoding": "gzip" });
    expect(inflated.trailers?.["grpc-status"]).toBe("8");
  });

  it("unknown methods and services, and JSON codecs, stay on Connect's routes and answer alike", async () => {
    const body = same(encoded(GetSourceRequestSchema, { id: fixtureIds[0] }));
    // UNIMPLEMENTED, trailers-only (the status in the headers, nothing after them), as gRPC servers answer.
    for (const path of [`${PRODUCTION}/Nope`, "/sourceledger.v2.Nope/GetSource"]) {
      const answer = await bothRaw(path, body);
      expect(answer.headers).toMatchObject({
        ":status": 200,
        "content-type": "application/grpc",
        "grpc-status": "12",
        "grpc-message": `unknown method ${path}`,
      });
      expect(answer.trailers).toBeUndefined();
      expect(answer.body.length).toBe(0);
    }
    // grpc-js reads it as what it is, with the server's message.
    for (const path of PATHS) {
      const client = new grpc.Client(`127.0.0.1:${servers[path].port}`, grpc.credentials.createInsecure());
      try {
        const status = await new Promise<grpc.ServiceError>((resolve) => {
          client.makeUnaryRequest(
            `${PRODUCTION}/Nope`,
            (bytes: Buffer) => bytes,
            (bytes: Buffer) => bytes,
            Buffer.alloc(0),
            (error) => resolve(error as grpc.ServiceError),
          );
        });
        expect([status.code, status.details]).toEqual([grpc.status.UNIMPLEMENTED, `unknown method ${PRODUCTION}/Nope`]);
      } finally {
        client.close();
      }
    }
    // gRPC-Web over HTTP/1.1 too: the status in the headers.
    const web = await fetch(`${servers.lean.baseUrl}${PRODUCTION}/Nope`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect([web.status, web.headers.get("grpc-status"), web.headers.get("content-type")]).toEqual([
      200,
      "12",
      "application/grpc-web+proto",
    ]);
    // Anything that is not gRPC still gets the REST 404.
    const rest = await fetch(`${servers.lean.baseUrl}${PRODUCTION}/Nope`, { method: "POST" });
    expect(rest.status).toBe(404);
    const json = await bothRaw(
      `${PRODUCTION}/GetSource`,
      same(envelope(Buffer.from(JSON.stringify({ id: fixtureIds[0] })))),
      {
        "content-type": "application/grpc+json",
      },
    );
    expect(json.headers["content-type"]).toBe("application/grpc+json");
    expect(json.trailers).toEqual({ "grpc-status": "0" });
  });

  it("a malformed :authority is invalid_argument naming the Host rule, before the token is read", async () => {
    const request = same(encoded(GetSourceRequestSchema, { id: fixtureIds[0] }));
    // Those nghttp2 lets through: it resets a stream whose :authority has other characters (`"`, `/`, space).
    // An IPv6 zone id too: Connect's handler builds a WHATWG URL from :authority, which takes none.
    for (const authority of ["x.example:99999999", "user@x.example", "a!b.example", "[fe80::1%25eth0]:8080"]) {
      const refused = await bothRaw(`${PRODUCTION}/GetSource`, request, { ":authority": authority }, () => null);
      expect(refused.headers[":status"], authority).toBe(200);
      expect(refused.trailers, authority).toMatchObject({
        "grpc-status": "3",
        "grpc-message": encodeURIComponent(MALFORMED_HOST),
      });
    }
    // Both an :authority and a host header: each is checked, whichever a reader takes.
    for (const headers of [
      { ":authority": "localhost", host: "a!b.example" },
      { ":authority": "a!b.example", host: "localhost" },
      { ":authority": "[fe80::1%25eth0]", host: "localhost" },
    ]) {
      const refused = await bothRaw(`${PRODUCTION}/GetSource`, request, headers);
      expect(refused.trailers?.["grpc-status"], JSON.stringify(headers)).toBe("3");
    }
    const literal = await bothRaw(`${PRODUCTION}/GetSource`, request, { ":authority": "[::1]:8080" });
    expect(literal.trailers?.["grpc-status"]).toBe("0");
  });

  it("metadata: a client's request id is echoed, other metadata is not", async () => {
    const answer = await bothRaw(
      `${PRODUCTION}/GetSource`,
      same(encoded(GetSourceRequestSchema, { id: fixtureIds[0] })),
      {
        "x-request-id": "matrix-42",
        "x-custom": "kept to itself",
      },
    );
    expect(answer.headers["x-request-id"]).toBe("matrix-42");
    expect(answer.headers["x-custom"]).toBeUndefined();
    expect(answer.trailers?.["x-custom"]).toBeUndefined();
  });
});

// --- @grpc/grpc-js ---

/** What a grpc-js caller sees, ids and times of records it created made comparable. */
function seen(outcome: UnaryOutcome): object {
  const dropGenerated = (metadata: grpc.Metadata | undefined) => {
    if (metadata === undefined) return undefined;
    const map = { ...metadata.getMap() };
    delete map.date;
    if (typeof map["x-request-id"] === "string") map["x-request-id"] = "<id>";
    return map;
  };
  return {
    code: outcome.code,
    details: outcome.details,
    response: outcome.response,
    headers: dropGenerated(outcome.headers),
    trailers: dropGenerated(outcome.trailers),
  };
}

/** Ids, alt_ids, times, page tokens and ids in texts replaced: what differs between two records made alike. */
function comparable(value: unknown): object {
  const walk = (node: unknown, key = ""): unknown => {
    if (typeof node === "string") {
      if (["id", "alt_id", "next_page_token"].includes(key)) return `<${key}>`;
      return node.replace(/(src_[0-9A-Z]{26}|sandbox_[0-9a-f-]{36})/g, "<id>");
    }
    if (Array.isArray(node)) return node.map((item) => walk(item, key));
    if (node !== null && typeof node === "object") {
      if (["created_at", "updated_at", "at"].includes(key)) return "<t>";
      return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, k)]));
    }
    return node;
  };
  return walk(value) as object;
}

describe("@grpc/grpc-js sees the same on both paths", () => {
  const services: ServiceName[] = ["SourceLedgerService", "SandboxSourceLedgerService"];

  it("every method of both services", async () => {
    for (const service of services) {
      // Each path creates, reads, pages, searches and deletes its own record (the sandbox lives in
      // each server's memory); ids, alt_ids and times aside, both see the same.
      const seenBy = {} as Record<PathName, object[]>;
      for (const path of PATHS) {
        const calls: object[] = [];
        const call = async (method: string, request: object) => {
          const outcome = await clients[path].call(service, method as never, request, tokens[path]);
          calls.push(comparable(seen(outcome)));
          return outcome;
        };
        const created = await call("CreateSources", {
          sources: [
            sourceInput(uniqueAlt(`same-${path}`), { geometry: { polygon: { rings: [circle(50, 10, 0.01, 40)] } } }),
          ],
        });
        expect(created.code).toBe(grpc.status.OK);
        const id = created.response.sources[0].id;
        await call("GetSource", { id });
        await call("ListSources", { alt_id: created.response.sources[0].alt_id });
        await call("SearchSources", { point: { lon: 50.005, lat: 10 }, query: { limit: 1 } });
        await call("ListSourceEvents", { id });
        await call("ListConflicts", { id });
        await call("DeleteSource", { id });
        await call("GetSource", { id });
        seenBy[path] = calls;
      }
      expect(seenBy.lean).toHaveLength(8);
      expect(seenBy.lean[0]).toMatchObject({ code: 0, response: { sources: [{ conflict: false }] } });
      expect(seenBy.lean[7]).toMatchObject({ code: grpc.status.NOT_FOUND });
      expect(seenBy.lean).toEqual(seenBy.connect);
    }
  });

  it("errors with details: invalid_argument decodes to the same google.rpc.BadRequest", async () => {
    const outcomes = await Promise.all(
      PATHS.map((path) =>
        clients[path].call(
          "SourceLedgerService",
          "CreateSources",
          { sources: [{ alt_id: "x", start_at: ts("2024-01-01T00:00:00Z") }] },
          tokens[path],
        ),
      ),
    );
    expect(outcomes[0].code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(outcomes[0]).map((v) => v.field)).toContain("sources[0].geometry");
    expect(seen(outcomes[0])).toEqual(seen(outcomes[1]));
  });

  it("gzip-compressed requests (grpc-js's default_compression_algorithm)", async () => {
    for (const path of PATHS) {
      const client = new grpc.Client(`127.0.0.1:${servers[path].port}`, grpc.credentials.createInsecure(), {
        "grpc.default_compression_algorithm": 2,
      });
      const bytes = toBinary(GetSourceRequestSchema, create(GetSourceRequestSchema, { id: fixtureIds[0] }));
      const metadata = new grpc.Metadata();
      metadata.add("authorization", `Bearer ${tokens[path]}`);
      const answer = await new Promise<Buffer>((resolve, reject) =>
        client.makeUnaryRequest(
          `${PRODUCTION}/GetSource`,
          (value: Buffer) => value,
          (value: Buffer) => value,
          Buffer.from(bytes),
          metadata,
          (error, value) => (error ? reject(error) : resolve(value as Buffer)),
        ),
      );
      expect(answer.length).toBeGreaterThan(50);
      client.close();
    }
  });

  it("deadlines: a call that cannot finish in time is deadline_exceeded on both", async () => {
    const many = { sources: Array.from({ length: 400 }, (_, i) => sourceInput(uniqueAlt(`slow-${i}`))) };
    for (const path of PATHS) {
      const outcome = await new Promise<grpc.StatusObject>((resolve) => {
        const metadata = new grpc.Metadata();
        metadata.add("authorization", `Bearer ${tokens[path]}`);
        const client = clients[path].clients.SandboxSourceLedgerService as unknown as Record<
          string,
          (...args: unknown[]) => grpc.ClientUnaryCall
        >;
        const call = client.CreateSources(many, metadata, { deadline: Date.now() + 2 }, () => {});
        call.on("status", resolve);
      });
      expect(outcome.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    }
  });

  it("the lean path itself answers deadline_exceeded when grpc-timeout passes first", async () => {
    const many = encoded(CreateSourcesRequestSchema, {
      sources: Array.from({ length: 1_000 }, (_, i) => ({
        altId: uniqueAlt(`deadline-${i}`),
        geometry: {
          kind: {
            case: "polygon" as const,
            value: { rings: [{ coordinates: circle(-120 + i * 0.05, 40, 0.01, 200).coordinates }] },
          },
        },
        startAt: { seconds: 1704067200n },
        endAt: { seconds: 1735689600n },
      })),
    });
    const answer = await rawCall("lean", "/sourceledger.v2.SandboxSourceLedgerService/CreateSources", many, {
      "grpc-timeout": "5m",
    });
    expect(answer.trailers).toMatchObject({ "grpc-status": "4", "grpc-message": "the%20operation%20timed%20out" });
  });

  it("a deadline longer than a timer can hold (grpc-timeout 99999999H, ~11,400 years) does not fire at once", async () => {
    const get = same(encoded(GetSourceRequestSchema, { id: fixtureIds[0] }));
    const read = await bothRaw(`${PRODUCTION}/GetSource`, get, { "grpc-timeout": "99999999H" });
    expect(read.trailers).toEqual({ "grpc-status": "0" });
    // A call that takes a while: a timer of 2^31 ms or more would have fired after 1 ms.
    const many = encoded(CreateSourcesRequestSchema, {
      sources: Array.from({ length: 300 }, (_, i) => ({
        altId: uniqueAlt(`long-deadline-${i}`),
        geometry: {
          kind: {
            case: "polygon" as const,
            value: { rings: [{ coordinates: circle(-100 + i * 0.05, 20, 0.01, 200).coordinates }] },
          },
        },
        startAt: { seconds: 1704067200n },
        endAt: { seconds: 1735689600n },
      })),
    });
    const answer = await rawCall("lean", "/sourceledger.v2.SandboxSourceLedgerService/CreateSources", many, {
      "grpc-timeout": "99999999H",
    });
    expect(answer.trailers).toEqual({ "grpc-status": "0" });
  });

  it("cancellation mid-call: the client sees cancelled; a body cut off never creates anything", async () => {
    for (const path of PATHS) {
      const status = await new Promise<grpc.StatusObject>((resolve) => {
        const metadata = new grpc.Metadata();
        metadata.add("authorization", `Bearer ${tokens[path]}`);
        const client = clients[path].clients.SourceLedgerService as unknown as Record<
          string,
          (...args: unknown[]) => grpc.ClientUnaryCall
        >;
        const call = client.ListSources({ limit: 1000 }, metadata, () => {});
        call.on("status", resolve);
        setImmediate(() => call.cancel());
      });
      expect(status.code).toBe(grpc.status.CANCELLED);

      // Half a create, then RST_STREAM(CANCEL): nothing is stored.
      const alt = uniqueAlt(`cut-${path}`);
      const body = encoded(CreateSourcesRequestSchema, {
        sources: [
          {
            altId: alt,
            geometry: {
              kind: { case: "polygon", value: { rings: [{ coordinates: [20, 20, 20.01, 20, 20.01, 20.01, 20, 20] }] } },
            },
            startAt: { seconds: 1704067200n },
            endAt: { seconds: 1735689600n },
          },
        ],
      });
      await new Promise<void>((resolve) => {
        const session = http2.connect(`http://127.0.0.1:${servers[path].port}`);
        const request = session.request({
          ":method": "POST",
          ":path": `${PRODUCTION}/CreateSources`,
          "content-type": "application/grpc",
          authorization: `Bearer ${tokens[path]}`,
        });
        request.on("error", () => {});
        request.write(body.subarray(0, 20), () => {
          request.close(http2.constants.NGHTTP2_CANCEL);
          setTimeout(() => {
            session.close();
            resolve();
          }, 100);
        });
      });
      const found = await clients[path].call("SourceLedgerService", "ListSources", { alt_id: alt }, tokens[path]);
      expect(found.response.sources).toEqual([]);
    }
  });

  it("500 concurrent streams on one connection: every call answered, the same on both", async () => {
    for (const path of PATHS) {
      const outcomes = await Promise.all(
        Array.from({ length: 500 }, (_, i) =>
          clients[path].call(
            "SourceLedgerService",
            "GetSource",
            { id: fixtureIds[i % fixtureIds.length] },
            tokens[path],
          ),
        ),
      );
      expect(outcomes.every((outcome) => outcome.code === grpc.status.OK)).toBe(true);
      expect(new Set(outcomes.map((outcome) => outcome.response.source.id))).toEqual(new Set(fixtureIds));
    }
  });

  it("a connection reset mid-answer: the server goes on serving", async () => {
    for (const path of PATHS) {
      const received = await new Promise<number>((resolve) => {
        const session = http2.connect(`http://127.0.0.1:${servers[path].port}`);
        session.on("error", () => {});
        const request = session.request({
          ":method": "POST",
          ":path": `${PRODUCTION}/GetSource`,
          "content-type": "application/grpc",
          authorization: `Bearer ${tokens[path]}`,
        });
        request.on("error", () => {});
        let bytes = 0;
        request.on("data", (chunk: Buffer) => {
          bytes += chunk.length;
          session.destroy();
        });
        request.on("close", () => resolve(bytes));
        request.end(encoded(GetSourceRequestSchema, { id: bigId }));
      });
      expect(received).toBeGreaterThan(0);
      expect(received).toBeLessThan(300_000);
      const after = await clients[path].call("SourceLedgerService", "GetSource", { id: bigId }, tokens[path]);
      expect(after.code).toBe(grpc.status.OK);
    }
  });
});

// --- Connect's Node client, gRPC and Connect protocols ---

describe("Connect's Node client sees the same on both paths", () => {
  async function outcome(promise: Promise<unknown>): Promise<object> {
    try {
      return { ok: await promise };
    } catch (error) {
      const e = ConnectError.from(error);
      return {
        code: e.code,
        message: e.rawMessage,
        details: e.details,
        metadata: [...e.metadata].filter(([name]) => name !== "date" && name !== "x-request-id"),
      };
    }
  }

  for (const protocol of ["grpc", "grpc+gzip", "connect"] as const) {
    it(`${protocol}: get, list, not found, invalid, a huge unknown id`, async () => {
      const results = [];
      for (const path of PATHS) {
        const baseUrl = servers[path].baseUrl;
        const transport =
          protocol === "connect"
            ? createConnectTransport({ baseUrl, httpVersion: "1.1" })
            : createGrpcTransport({
                baseUrl,
                ...(protocol === "grpc+gzip" ? { sendCompression: compressionGzip } : {}),
              });
        const client = createClient(SourceLedgerService, transport);
        const headers = { authorization: `Bearer ${tokens[path]}` };
        results.push([
          await outcome(client.getSource({ id: fixtureIds[0] }, { headers })),
          await outcome(client.listSources({ limit: 100 }, { headers })),
          await outcome(client.getSource({ id: "src_missing" }, { headers })),
          await outcome(client.createSources({ sources: [{ altId: "" }] }, { headers })),
          // 100,000 characters: quoted whole, the message outgrew gRPC's trailers (a FRAME_SIZE_ERROR).
          await outcome(client.getSource({ id: "x".repeat(100_000) }, { headers })),
        ]);
      }
      expect(results[0][0]).toMatchObject({ ok: { source: { id: fixtureIds[0] } } });
      expect(results[0][2]).toMatchObject({ code: Code.NotFound });
      expect(results[0][3]).toMatchObject({ code: Code.InvalidArgument });
      expect(results[0][4]).toMatchObject({ code: Code.NotFound, message: `source "${"x".repeat(80)}…" not found` });
      expect(results[0]).toEqual(results[1]);
    });
  }
});

// --- buf curl, the schema from reflection ---

describe("buf curl (reflection, no --schema) sees the same on both paths", () => {
  it("GetSource, ListSources and an error", async () => {
    const curl = async (path: PathName, method: string, data: object) => {
      const args = [
        "curl",
        "--protocol",
        "grpc",
        "--http2-prior-knowledge",
        "-H",
        `authorization: Bearer ${tokens[path]}`,
        "-d",
        JSON.stringify(data),
      ];
      const result = await run(BUF, [...args, `${servers[path].baseUrl}${PRODUCTION}/${method}`]).then(
        ({ stdout }) => ({ stdout, stderr: "" }),
        (error: { stdout: string; stderr: string }) => ({ stdout: error.stdout, stderr: error.stderr }),
      );
      return result;
    };
    for (const [method, data] of [
      ["GetSource", { id: fixtureIds[0] }],
      ["ListSources", { limit: 3 }],
      ["GetSource", { id: "src_missing" }],
    ] as const) {
      const [lean, connect] = [await curl("lean", method, data), await curl("connect", method, data)];
      expect(lean).toEqual(connect);
      if (data.id === "src_missing") expect(lean.stderr).toContain("not_found");
      else expect(JSON.parse(lean.stdout)).toEqual(expect.any(Object));
    }
  }, 60_000);
});

describe("/metrics counts lean calls as Connect's routes count theirs", () => {
  it("protocol grpc, the method's path, its code", async () => {
    const counted = async (path: PathName) => {
      const text = await (await servers[path].request("GET", "/metrics")).text();
      const line = text
        .split("\n")
        .find((l) =>
          l.startsWith(
            'source_ledger_requests_total{protocol="grpc",method="sourceledger.v2.SourceLedgerService/GetSource",code="not_found"}',
          ),
        );
      return line === undefined ? 0 : Number(line.split(" ").pop());
    };
    for (const path of PATHS) {
      const before = await counted(path);
      await rawCall(path, `${PRODUCTION}/GetSource`, encoded(GetSourceRequestSchema, { id: "src_counted" }));
      expect(await counted(path)).toBe(before + 1);
    }
  });
});

describe("refusals from outside the service: a store outage and the rate limit, alike on both paths", () => {
  /** A lean and a Connect-only server started with `env` and `store`, closed after `body`. */
  async function pair(
    env: Record<string, string>,
    store: ((config: Parameters<typeof openProductionStore>[0]) => Promise<SourceStore>) | undefined,
    body: (servers: Record<PathName, TestServer>) => Promise<void>,
  ): Promise<void> {
    const opened = {
      lean: await startTestServer(env, store ? { store } : {}),
      connect: await startTestServer({ ...env, GRPC_LEAN_PATH: "off" }, store ? { store } : {}),
    };
    try {
      await body(opened);
    } finally {
      await opened.lean.close();
      await opened.connect.close();
    }
  }

  /** One raw GetSource to `server` (rawCall's normalisation, another server's port and token). */
  async function getOn(server: TestServer, id: string): Promise<RawAnswer> {
    const saved = { server: servers.lean, token: tokens.lean };
    servers.lean = server;
    tokens.lean = await server.token();
    try {
      return await rawCall("lean", `${PRODUCTION}/GetSource`, encoded(GetSourceRequestSchema, { id }));
    } finally {
      servers.lean = saved.server;
      tokens.lean = saved.token;
    }
  }

  it("a store that is down: unavailable, a fixed text, no driver message", async () => {
    const down = async (config: Parameters<typeof openProductionStore>[0]): Promise<SourceStore> => {
      const inner = await openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy });
      return new Proxy(inner, {
        get(target, property) {
          if (property === "get") {
            return () =>
              Promise.reject(new StoreUnavailableError("connect ECONNREFUSED 10.9.8.7:27017 password=hunter2"));
          }
          const value = Reflect.get(target, property);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    };
    await pair({}, down, async (opened) => {
      const [lean, connect] = [await getOn(opened.lean, "src_x"), await getOn(opened.connect, "src_x")];
      expect(lean).toEqual(connect);
      expect(lean.trailers?.["grpc-status"]).toBe("14");
      expect(JSON.stringify(lean)).not.toMatch(/ECONNREFUSED|hunter2/);
    });
  });

  it("the per-account rate limit: resource_exhausted with retry-after and a RetryInfo detail", async () => {
    await pair({ RATE_LIMIT_READS_PER_S: "1" }, undefined, async (opened) => {
      const refusal = async (server: TestServer) => {
        for (let i = 0; i < 10; i++) {
          const answer = await getOn(server, "src_x");
          if (answer.trailers?.["grpc-status"] === "8") return answer;
        }
        throw new Error("never refused");
      };
      const [lean, connect] = [await refusal(opened.lean), await refusal(opened.connect)];
      for (const answer of [lean, connect]) {
        expect(answer.trailers?.["retry-after"]).toMatch(/^\d+$/);
        expect(answer.trailers?.["grpc-status-details-bin"]).toEqual(expect.any(String));
      }
      // The wait left depends on the instant of the call; everything else is the same.
      const timeless = (answer: RawAnswer) => {
        const { "retry-after": _wait, "grpc-status-details-bin": _details, ...rest } = answer.trailers ?? {};
        return { ...answer, trailers: rest };
      };
      expect(timeless(lean)).toEqual(timeless(connect));
      expect(decodeURIComponent(String(lean.trailers?.["grpc-message"]))).toMatch(/^too many reads for this account/);
    });
  });
});
