/**
 * A gRPC list or search answer stays under 4 MiB encoded (contract §10, docs/api.md §10): a
 * grpc-js client with its DEFAULT options (4 MiB receive limit) lists 12 sources of 100,000
 * positions each (about 1.6 MB apiece on the wire) with limit 1,000 and follows next_page_token:
 * no RESOURCE_EXHAUSTED, several pages, every source exactly once and bit for bit as created.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
const SOURCES = 12;
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

describe.each<[ServiceName, string]>([
  ["SourceLedgerService", "production"],
  ["SandboxSourceLedgerService", "sandbox"],
])("%s (%s): large sources over gRPC with default client limits", (service, env) => {
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
      expect(coordinates).toStrictEqual(coordinatesById.get(source.id));
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
