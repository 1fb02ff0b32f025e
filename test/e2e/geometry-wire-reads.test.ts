/**
 * Which answers ask the store for its Geometry wire bytes (RecordRead.geometryWire): those written
 * in protobuf binary (gRPC on the lean path and on Connect's, gRPC-Web, Connect `+proto`), never a
 * JSON codec or REST, and the geometry each answer carries is the stored one, to the last bit.
 */
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type Source, SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import type { RecordRead } from "../../src/model/records.js";
import { unepOverlapPolicy } from "../../src/protected-areas/overlap.js";
import { openProductionStore } from "../../src/store/open.js";
import type { SourceStore } from "../../src/store/port.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";
import { expectJson } from "./rest-support.js";

/** What each list and get asked for, in call order. */
const asked: { call: "list" | "get"; geometryWire: boolean }[] = [];

async function recordingStore(config: Parameters<typeof openProductionStore>[0]): Promise<SourceStore> {
  const inner = await openProductionStore(config, { conflictPolicy, protectedAreaPolicy: unepOverlapPolicy });
  return new Proxy(inner, {
    get(target, property) {
      const value = Reflect.get(target, property);
      if (property === "list") {
        return (query: RecordRead) => {
          asked.push({ call: "list", geometryWire: query.geometryWire === true });
          return value.call(target, query);
        };
      }
      if (property === "get") {
        return (id: string, accountId: string | null, read?: RecordRead) => {
          asked.push({ call: "get", geometryWire: read?.geometryWire === true });
          return value.call(target, id, accountId, read);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

describe.each([
  ["the lean gRPC path", {}],
  ["Connect's adapter only (GRPC_LEAN_PATH=off)", { GRPC_LEAN_PATH: "off" }],
] as const)("%s", (_mode, env) => {
  let server: TestServer;
  let grpcJs: LedgerGrpc;
  let token = "";
  let id = "";
  // Full-precision doubles: a lossy path would change their bits.
  const shell = [1e-9, 0, 0.1 + 0.2, 0, 0.30000000000000004, 0.123456789012345, 1e-9, 0.123456789012345, 1e-9, 0];

  beforeAll(async () => {
    server = await startTestServer(env, { store: recordingStore });
    grpcJs = new LedgerGrpc(server.port);
    token = await server.userToken("acct-wire");
    const [created] = await expectJson<{ id: string }[]>(
      await server.request("POST", "/sources", {
        token,
        json: {
          alt_id: "wire-1",
          geometry: {
            type: "Polygon",
            coordinates: [
              [
                [shell[0], shell[1]],
                [shell[2], shell[3]],
                [shell[4], shell[5]],
                [shell[6], shell[7]],
                [shell[8], shell[9]],
              ],
            ],
          },
          start_at: "2024-01-01T00:00:00Z",
          end_at: "2025-01-01T00:00:00Z",
        },
      }),
      201,
    );
    id = created.id;
  });

  afterAll(async () => {
    grpcJs?.close();
    await server?.close();
  });

  beforeEach(() => {
    asked.length = 0;
  });

  function ringOf(source: Source | undefined): number[] {
    const kind = source?.geometry?.kind;
    if (kind?.case !== "polygon") throw new Error("no polygon");
    return kind.value.rings[0].coordinates;
  }

  const transports: [string, (baseUrl: string) => Transport, boolean][] = [
    ["gRPC (binary)", (baseUrl) => createGrpcTransport({ baseUrl }), true],
    ["gRPC (JSON codec)", (baseUrl) => createGrpcTransport({ baseUrl, useBinaryFormat: false }), false],
    ["gRPC-Web (binary)", (baseUrl) => createGrpcWebTransport({ baseUrl, httpVersion: "1.1" }), true],
    ["Connect (binary)", (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1" }), true],
    [
      "Connect (JSON)",
      (baseUrl) => createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false }),
      false,
    ],
  ];

  describe.each(transports)("%s", (_name, transport, binary) => {
    let client: Client<typeof SourceLedgerService>;
    beforeAll(() => {
      client = createClient(SourceLedgerService, transport(server.baseUrl));
    });
    const headers = () => ({ authorization: `Bearer ${token}` });

    it(`GetSource and ListSources ${binary ? "ask" : "do not ask"} for the wire bytes; the geometry is exact`, async () => {
      const got = await client.getSource({ id }, { headers: headers() });
      const listed = await client.listSources({}, { headers: headers() });
      expect(asked).toEqual([
        { call: "get", geometryWire: binary },
        { call: "list", geometryWire: binary },
      ]);
      expect(ringOf(got.source)).toEqual(shell);
      expect(ringOf(listed.sources[0])).toEqual(shell);
    });
  });

  describe("grpc-js and REST", () => {
    it("grpc-js asks for them on GetSource and ListSources; the geometry is exact", async () => {
      const got = await grpcJs.call("SourceLedgerService", "GetSource", { id }, token);
      const listed = await grpcJs.call("SourceLedgerService", "ListSources", {}, token);
      expect(asked).toEqual([
        { call: "get", geometryWire: true },
        { call: "list", geometryWire: true },
      ]);
      expect(got.response.source.geometry.polygon.rings[0].coordinates).toEqual(shell);
      expect(listed.response.sources[0].geometry.polygon.rings[0].coordinates).toEqual(shell);
    });

    it("as_of reads (from the events, no stored bytes) answer the same exact geometry", async () => {
      const created = await expectJson<{ created_at: string }>(
        await server.request("GET", `/sources/${id}`, { token }),
        200,
      );
      // An instant after the create, already past.
      const at = Date.parse(created.created_at) + 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      const asOf = { seconds: String(Math.floor(at / 1000)), nanos: (at % 1000) * 1_000_000 };
      const got = await grpcJs.call("SourceLedgerService", "GetSource", { id, as_of: asOf }, token);
      const listed = await grpcJs.call("SourceLedgerService", "ListSources", { as_of: asOf }, token);
      expect(got.code).toBe(0);
      expect(got.response.source.geometry.polygon.rings[0].coordinates).toEqual(shell);
      expect(listed.response.sources.map((s: { id: string }) => s.id)).toEqual([id]);
      expect(listed.response.sources[0].geometry.polygon.rings[0].coordinates).toEqual(shell);
    });

    it("REST never does", async () => {
      await expectJson(await server.request("GET", `/sources/${id}`, { token }), 200);
      await expectJson(await server.request("GET", "/sources", { token }), 200);
      expect(asked).toEqual([
        { call: "get", geometryWire: false },
        { call: "list", geometryWire: false },
      ]);
    });
  });
});
