/**
 * A gRPC list or search answer stays under 4 MiB encoded (contract §10, docs/api.md §10): a
 * grpc-js client with its DEFAULT options (4 MiB receive limit) lists 12 sources of 100,000
 * positions each (about 1.6 MB apiece on the wire) with limit 1,000 and follows next_page_token:
 * no RESOURCE_EXHAUSTED, several pages, every source exactly once and bit for bit as created.
 * The same bound over Connect (binary and JSON) and over gRPC with the JSON codec, read raw.
 */
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ListSourcesRequestSchema, ListSourcesResponseSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc, type ServiceName } from "./grpc-support.js";
import {
  expectDistinct,
  type Geometry,
  type Position,
  type RpcSource,
  rpcOk,
  rpcSourceInput,
  walkRpc,
} from "./paging-support.js";

let server: TestServer;
/** grpc-js with default channel options: grpc.max_receive_message_length is 4 MiB. */
let client: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

const POSITIONS = 100_000;
const FOUR_MIB = 4 * 1024 * 1024;

/** A circle-like ring of exactly POSITIONS positions (the last closes it), radius 0.05°. */
function circle(cx: number, cy: number): Geometry {
  const ring: Position[] = [];
  const n = POSITIONS - 1;
  for (let i = 0; i < n; i++) {
    const angle = (2 * Math.PI * i) / n;
    ring.push([cx + 0.05 * Math.cos(angle), cy + 0.05 * Math.sin(angle)]);
  }
  ring.push(ring[0]);
  return { type: "Polygon", coordinates: [ring] };
}

// Production with 12 sources; the sandbox (another store, the same cut) with 6 to keep the time down.
describe.each<[ServiceName, string, number]>([
  ["SourceLedgerService", "production", 12],
  ["SandboxSourceLedgerService", "sandbox", 6],
])("%s (%s): %i large sources over gRPC with default client limits", (service, env, SOURCES) => {
  const token = () => server.userToken(`acct-big-${env}`);
  const created: RpcSource[] = [];
  const coordinatesById = new Map<string, number[]>();

  beforeAll(async () => {
    const t = await token();
    // Two sources (about 3.2 MB) a request: the answer echoes them, and this client takes 4 MiB.
    for (let batch = 0; batch < SOURCES / 2; batch++) {
      const sources = Array.from({ length: 2 }, (_, i) => {
        const k = batch * 2 + i;
        return rpcSourceInput(`big-${k}`, circle(-120 + (k % 6) * 0.2, 50 + Math.floor(k / 6) * 0.2));
      });
      const response = await rpcOk<{ sources: RpcSource[] }>(client, service, "CreateSources", { sources }, t);
      for (const [i, source] of response.sources.entries()) {
        created.push(source);
        coordinatesById.set(source.id, (sources[i].geometry as any).polygon.rings[0].coordinates);
      }
    }
    expect(created).toHaveLength(SOURCES);
  }, 60_000);

  function expectEveryOnceAndIntact(sources: RpcSource[], pageSizes: number[]): void {
    expect(expectDistinct(sources.map((s) => s.id)).sort()).toEqual(created.map((s) => s.id).sort());
    for (const source of sources) {
      const coordinates: number[] = source.geometry.polygon.rings[0].coordinates;
      expect(coordinates).toHaveLength(2 * POSITIONS);
      // The same doubles bit for bit (compared as bytes: a deep equal of 200,000 numbers is slow).
      const sent = coordinatesById.get(source.id) as number[];
      expect(Buffer.from(new Float64Array(coordinates).buffer).equals(Buffer.from(new Float64Array(sent).buffer))).toBe(
        true,
      );
    }
    // 12 × ~1.6 MB cannot fit one 4 MiB answer: several pages, none empty, each under the limit.
    expect(pageSizes.length).toBeGreaterThan(1);
    expect(pageSizes.every((n) => n > 0)).toBe(true);
    expect(Math.max(...pageSizes) * 2 * POSITIONS * 8).toBeLessThan(FOUR_MIB);
  }

  it("ListSources with limit 1,000 pages by next_page_token, never RESOURCE_EXHAUSTED", async () => {
    const walk = await walkRpc(client, service, "ListSources", { limit: 1_000 }, await token());
    expectEveryOnceAndIntact(walk.sources, walk.pageSizes);
  }, 60_000);

  /**
   * Every page of ListSources with limit 1,000 through `call`, which answers one page's encoded
   * size (the Connect body, or the gRPC message) and its ids and next token.
   */
  async function walkRaw(
    call: (pageToken: string) => Promise<{ bytes: number; ids: string[]; next: string }>,
    maxBytes = FOUR_MIB,
  ): Promise<string[][]> {
    const pages: string[][] = [];
    let next = "";
    do {
      const page = await call(next);
      // Under 4 MiB, the default receive limit of gRPC clients (contract §10).
      expect(page.bytes, `page ${pages.length + 1}: ${page.bytes} bytes`).toBeLessThan(maxBytes);
      expect(page.ids.length).toBeGreaterThan(0);
      pages.push(page.ids);
      next = page.next;
    } while (next !== "" && pages.length < 20);
    expect(next).toBe("");
    expect(expectDistinct(pages.flat()).sort()).toEqual(created.map((s) => s.id).sort());
    expect(pages.length).toBeGreaterThan(1);
    return pages;
  }

  const path = `/sourceledger.v2.${service}/ListSources`;

  let binaryPages: string[][] = [];

  it("Connect with binary messages (application/proto): each answer under 4 MiB, every source once", async () => {
    const t = await token();
    binaryPages = await walkRaw(async (pageToken) => {
      const res = await fetch(`${server.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/proto", authorization: `Bearer ${t}` },
        body: toBinary(ListSourcesRequestSchema, create(ListSourcesRequestSchema, { limit: 1_000, pageToken })),
      });
      expect(res.status).toBe(200);
      const bytes = new Uint8Array(await res.arrayBuffer());
      const answer = fromBinary(ListSourcesResponseSchema, bytes);
      return { bytes: bytes.length, ids: answer.sources.map((s) => s.id), next: answer.nextPageToken };
    });
  }, 60_000);

  // docs/api.md §12: a JSON answer stays under 4 MiB of JSON, so its pages are shorter than the
  // binary ones (one of these sources takes ~3.8 MB in JSON, 1.6 MB in binary).
  it("Connect with JSON messages: each answer under 4 MiB, every source once, shorter pages than binary", async () => {
    const t = await token();
    const jsonPages = await walkRaw(async (pageToken) => {
      const res = await fetch(`${server.baseUrl}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${t}` },
        body: JSON.stringify({ limit: 1_000, pageToken }),
      });
      expect(res.status).toBe(200);
      const text = await res.text();
      const answer = JSON.parse(text) as { sources?: { id: string }[]; nextPageToken?: string };
      return {
        bytes: Buffer.byteLength(text),
        ids: (answer.sources ?? []).map((s) => s.id),
        next: answer.nextPageToken ?? "",
      };
    });
    expect(jsonPages.flat().sort()).toEqual(binaryPages.flat().sort());
    expect(jsonPages.length).toBeGreaterThan(binaryPages.length);
  }, 60_000);

  it("gRPC-Web with binary messages: each answer message under 4 MiB, every source once", async () => {
    const t = await token();
    const session = http2.connect(server.baseUrl);
    try {
      await walkRaw(async (pageToken) => {
        const request = toBinary(
          ListSourcesRequestSchema,
          create(ListSourcesRequestSchema, { limit: 1_000, pageToken }),
        );
        const { status, message } = await rawGrpcCall(session, path, "application/grpc-web+proto", request, t);
        expect(status).toBe("0");
        const answer = fromBinary(ListSourcesResponseSchema, message);
        return { bytes: message.length, ids: answer.sources.map((s) => s.id), next: answer.nextPageToken };
      });
    } finally {
      session.close();
    }
  }, 60_000);

  // A gRPC answer's encoded size stays under 4 MiB (contract §10) in the codec it is written in:
  // the cut is made on each source's JSON size for the JSON codec (src/rpc/page-size.ts).
  it("gRPC with the JSON codec (application/grpc+json): each answer message under 4 MiB", async () => {
    const t = await token();
    const session = http2.connect(server.baseUrl);
    try {
      await walkRaw(async (pageToken) => {
        const request = Buffer.from(JSON.stringify({ limit: 1_000, pageToken }));
        const { status, message } = await rawGrpcCall(session, path, "application/grpc+json", request, t);
        expect(status).toBe("0");
        const answer = JSON.parse(message.toString("utf8")) as { sources?: { id: string }[]; nextPageToken?: string };
        return {
          bytes: message.length,
          ids: (answer.sources ?? []).map((s) => s.id),
          next: answer.nextPageToken ?? "",
        };
      });
    } finally {
      session.close();
    }
  }, 60_000);

  it("SearchSources with limit 1,000 pages likewise", async () => {
    const walk = await walkRpc(
      client,
      service,
      "SearchSources",
      { box: { min_lon: -121, min_lat: 49, max_lon: -118, max_lat: 51 }, query: { limit: 1_000 } },
      await token(),
    );
    expectEveryOnceAndIntact(walk.sources, walk.pageSizes);
  }, 60_000);
});

/**
 * One unary gRPC (or gRPC-Web) call over h2c, read raw: the first answer frame's message and the
 * grpc-status (from the trailers, or from gRPC-Web's trailer frame).
 */
async function rawGrpcCall(
  session: http2.ClientHttp2Session,
  path: string,
  contentType: string,
  body: Uint8Array,
  token: string,
): Promise<{ status: string | undefined; message: Buffer }> {
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  Buffer.from(body).copy(frame, 5);
  const stream = session.request({
    ":method": "POST",
    ":path": path,
    "content-type": contentType,
    te: "trailers",
    authorization: `Bearer ${token}`,
  });
  const chunks: Buffer[] = [];
  let status: string | undefined;
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  stream.on("trailers", (trailers) => {
    status = String(trailers["grpc-status"]);
  });
  await new Promise<void>((resolve, reject) => {
    stream.on("end", () => resolve());
    stream.on("error", reject);
    stream.end(frame);
  });
  const data = Buffer.concat(chunks);
  const length = data.length >= 5 ? data.readUInt32BE(1) : 0;
  const message = data.subarray(5, 5 + length);
  const rest = data.subarray(5 + length);
  if (status === undefined && rest.length >= 5 && (rest[0] & 0x80) !== 0) {
    const trailer = rest.subarray(5, 5 + rest.readUInt32BE(1)).toString("latin1");
    status = /grpc-status:\s*(\d+)/i.exec(trailer)?.[1];
  }
  return { status, message };
}
