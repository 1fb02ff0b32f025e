/**
 * The same source read through every protocol and codec Connect serves on the one port. Binary
 * answers carry the geometry pre-encoded (src/rpc/source-wire.ts); JSON answers build it as a
 * message. Every client must see the same positions, to the last bit.
 */

import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SandboxSourceLedgerService,
  type Source,
  SourceLedgerService,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";

let server: TestServer;
let grpcJs: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  grpcJs = new LedgerGrpc(server.port);
});

afterAll(async () => {
  grpcJs?.close();
  await server?.close();
});

// Coordinates that a lossy or reordering encoder would get wrong: full-precision decimals, tiny
// and long mantissas, and a hole in a second polygon. (No -0: JSON codecs write it as 0, and the
// production store keeps GeoJSON text, which does too.)
const shell = [1e-9, 0, 0.1 + 0.2, 0, 0.30000000000000004, 0.123456789012345, 1e-9, 0.123456789012345, 1e-9, 0];
const part2Shell = [10, 10, 11, 10, 11, 11, 10, 11, 10, 10];
const part2Hole = [10.25, 10.25, 10.25, 10.75, 10.75, 10.75, 10.75, 10.25, 10.25, 10.25];

const transports: [string, (baseUrl: string) => Transport][] = [
  ["gRPC (binary, HTTP/2)", (baseUrl) => createGrpcTransport({ baseUrl })],
  ["gRPC (JSON codec, HTTP/2)", (baseUrl) => createGrpcTransport({ baseUrl, useBinaryFormat: false })],
  ["gRPC-Web (binary)", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" })],
  ["gRPC-Web (JSON)", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
  ["Connect (binary)", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" })],
  ["Connect (JSON)", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false })],
];

function coordinatesOf(source: Source | undefined): number[][][] {
  const kind = source?.geometry?.kind;
  if (kind?.case === "polygon") return [kind.value.rings.map((r) => r.coordinates)];
  if (kind?.case === "multiPolygon") return kind.value.polygons.map((p) => p.rings.map((r) => r.coordinates));
  throw new Error(`no geometry on ${source?.id}`);
}

/** Shortest round-trip text of each double: equal text means equal bits. */
function bits(values: number[][][]): string[][][] {
  return values.map((p) => p.map((ring) => ring.map((v) => v.toString())));
}

describe.each([
  ["production", SourceLedgerService],
  ["sandbox", SandboxSourceLedgerService],
] as const)("%s: one source through every codec", (_name, service) => {
  let polygonId = "";
  let multiId = "";
  let headers: Record<string, string> = {};

  beforeAll(async () => {
    headers = { authorization: `Bearer ${await server.userToken(`acct-codecs-${_name}`)}` };
    const creator = createClient(
      service as typeof SourceLedgerService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
    const period = { startAt: { seconds: 1704067200n, nanos: 0 }, endAt: { seconds: 1735689600n, nanos: 0 } };
    const created = await creator.createSources(
      {
        sources: [
          {
            altId: "codec-polygon",
            geometry: { kind: { case: "polygon", value: { rings: [{ coordinates: shell }] } } },
            ...period,
          },
          {
            altId: "codec-multi",
            geometry: {
              kind: {
                case: "multiPolygon",
                value: {
                  polygons: [
                    { rings: [{ coordinates: shell.map((v, i) => (i % 2 === 0 ? v + 5 : v)) }] },
                    { rings: [{ coordinates: part2Shell }, { coordinates: part2Hole }] },
                  ],
                },
              },
            },
            ...period,
          },
        ],
      },
      { headers },
    );
    [polygonId, multiId] = created.sources.map((s) => s.id);
  });

  it.each(transports)(
    "%s: GetSource and ListSources return the stored positions bit for bit",
    async (_label, transport) => {
      const client: Client<typeof SourceLedgerService> = createClient(
        service as typeof SourceLedgerService,
        transport(server.baseUrl),
      );
      const polygon = await client.getSource({ id: polygonId }, { headers });
      expect(polygon.source?.altId).toBe("codec-polygon");
      expect(polygon.source?.geometry?.kind.case).toBe("polygon");
      expect(bits(coordinatesOf(polygon.source))).toEqual(bits([[shell]]));

      const multi = await client.getSource({ id: multiId }, { headers });
      expect(multi.source?.geometry?.kind.case).toBe("multiPolygon");
      expect(bits(coordinatesOf(multi.source))).toEqual(
        bits([[shell.map((v, i) => (i % 2 === 0 ? v + 5 : v))], [part2Shell, part2Hole]]),
      );

      const listed = await client.listSources({}, { headers });
      expect(listed.sources.map((s) => s.altId).sort()).toEqual(["codec-multi", "codec-polygon"]);
      for (const source of listed.sources) {
        const expected = source.id === polygonId ? polygon.source : multi.source;
        expect(bits(coordinatesOf(source))).toEqual(bits(coordinatesOf(expected)));
        // Everything besides the geometry is there too.
        expect(source.startAt?.seconds).toBe(1704067200n);
        expect(source.accountId).toBe(`acct-codecs-${_name}`);
      }
    },
  );

  it("an independent gRPC client (grpc-js, binary) decodes the pre-encoded geometry", async () => {
    const token = headers.authorization.slice("Bearer ".length);
    const serviceName = _name === "production" ? "SourceLedgerService" : "SandboxSourceLedgerService";
    const answer = await grpcJs.ok(serviceName, "GetSource", { id: multiId }, token);
    expect(answer.source.geometry.multi_polygon.polygons[1].rings[1].coordinates).toStrictEqual(part2Hole);
    expect(answer.source.geometry.multi_polygon.polygons).toHaveLength(2);
    expect(answer.source.alt_id).toBe("codec-multi");
  });
});
