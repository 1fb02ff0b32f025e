/**
 * Validation parity over gRPC: INVALID_ARGUMENT with the standard google.rpc.BadRequest detail
 * (docs/api.md §9.5) whose field paths name the request message fields. Read
 * two ways: Connect's gRPC client (`findDetails`) and grpc-js with the `grpc-status-details-bin`
 * trailer decoded by hand; both must agree. Also ALREADY_EXISTS and all-or-nothing.
 */

import http2 from "node:http2";
import { fromBinary } from "@bufbuild/protobuf";
import { type Client, Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { SourceLedgerService } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  BAD_REQUEST_TYPE_URL,
  fieldViolations,
  grpc,
  LedgerGrpc,
  polygonGeometry,
  SERVICES,
  type ServiceName,
  sourceInput,
  statusDetails,
  ts,
  uniqueAlt,
} from "./grpc-support.js";

let server: TestServer;
let client: LedgerGrpc;

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
});

afterAll(async () => {
  client?.close();
  await server?.close();
});

type V = { field: string; description: string };

async function rejected(service: ServiceName, sources: object[], account = "acct-validation"): Promise<V[]> {
  const token = await server.userToken(account);
  const outcome = await client.call(service, "CreateSources", { sources }, token);
  expect(outcome.code, outcome.details).toBe(grpc.status.INVALID_ARGUMENT);
  return fieldViolations(outcome);
}

const fields = (violations: V[]) => violations.map((v) => v.field);

const ring = (...coordinates: number[]) => ({ coordinates });
const polygon = (...rings: number[][]) => ({ polygon: { rings: rings.map((c) => ring(...c)) } });

describe.each(SERVICES)("%s: INVALID_ARGUMENT with BadRequest field paths", (service) => {
  it("an unclosed ring → sources[0].geometry.polygon.rings[0]", async () => {
    const violations = await rejected(service, [
      sourceInput(uniqueAlt(), { geometry: polygon([0, 0, 1, 0, 1, 1, 0, 1, 0, 0.5]) }),
    ]);
    expect(fields(violations)).toEqual(["sources[0].geometry.polygon.rings[0]"]);
    expect(violations[0].description).toMatch(/not closed/);
  });

  it("an unclosed hole of the second part of a MultiPolygon → …multi_polygon.polygons[1].rings[1]", async () => {
    const geometry = {
      multi_polygon: {
        polygons: [
          { rings: [ring(0, 0, 1, 0, 1, 1, 0, 1, 0, 0)] },
          { rings: [ring(2, 0, 3, 0, 3, 1, 2, 1, 2, 0), ring(2.2, 0.2, 2.4, 0.2, 2.4, 0.4, 2.2, 0.4)] },
        ],
      },
    };
    const violations = await rejected(service, [sourceInput(uniqueAlt(), { geometry })]);
    expect(fields(violations)).toEqual(["sources[0].geometry.multi_polygon.polygons[1].rings[1]"]);
  });

  it("an odd number of packed coordinates → the ring, with a description mentioning odd", async () => {
    const violations = await rejected(service, [
      sourceInput(uniqueAlt(), { geometry: polygon([0, 0, 1, 0, 1, 1, 0, 1, 0, 0, 7]) }),
    ]);
    expect(fields(violations)).toEqual(["sources[0].geometry.polygon.rings[0]"]);
    expect(violations[0].description).toMatch(/odd/);
    expect(violations[0].description).toContain("11");
  });

  it("a missing start_at on the second source → sources[1].start_at only", async () => {
    const violations = await rejected(service, [
      sourceInput(uniqueAlt()),
      sourceInput(uniqueAlt(), { start_at: null }),
    ]);
    expect(fields(violations)).toEqual(["sources[1].start_at"]);
    expect(violations[0].description).toBe("start_at is required");
  });

  it("an alt_id repeated inside the request → the repeating source's alt_id", async () => {
    const alt = uniqueAlt();
    const violations = await rejected(service, [sourceInput(alt), sourceInput(uniqueAlt()), sourceInput(alt)]);
    expect(fields(violations)).toEqual(["sources[2].alt_id"]);
    expect(violations[0].description).toContain("repeats source 0");
  });

  it.each([
    ["source_type", "sources[0].source_type", { source_type: 99 }],
    ["geometry_source", "sources[0].geometry_source", { geometry_source: 5 }],
    ["attribute_type", "sources[0].attribute_type[1]", { attribute_type: ["ATTRIBUTE_TYPE_CI_SCORE", 99] }],
    ["attribute_type 0", "sources[0].attribute_type[0]", { attribute_type: [0] }],
  ])("unknown enum number in %s → violation on %s", async (_name, field, overrides) => {
    const violations = await rejected(service, [sourceInput(uniqueAlt(), overrides)]);
    expect(fields(violations)).toEqual([field]);
    expect(violations[0].description).toMatch(/is not one of/);
  });

  it.each([
    ["empty alt_id", "sources[0].alt_id", { alt_id: "" }],
    ["alt_id of 257 characters", "sources[0].alt_id", { alt_id: "a".repeat(257) }],
    ["alt_id with a control character", "sources[0].alt_id", { alt_id: "a\u0007b" }],
    ["alt_id with a leading space", "sources[0].alt_id", { alt_id: " lead" }],
    ["empty methodology", "sources[0].methodology", { methodology: "" }],
    ["steward_id of 257", "sources[0].steward_id", { steward_id: "s".repeat(257) }],
    ["empty project_id", "sources[0].project_id", { project_id: "" }],
    ["65 tags", "sources[0].tags", { tags: Array.from({ length: 65 }, (_, i) => `t${i}`) }],
    ["an empty tag", "sources[0].tags[1]", { tags: ["ok", ""] }],
    ["a tag of 129", "sources[0].tags[0]", { tags: ["x".repeat(129)] }],
    ["year 999", "sources[0].outcome_reporting_year", { outcome_reporting_year: 999 }],
    ["year 10000", "sources[0].outcome_reporting_year", { outcome_reporting_year: 10000 }],
    ["year 0 explicitly set", "sources[0].outcome_reporting_year", { outcome_reporting_year: 0 }],
    [
      "repeated attribute_type",
      "sources[0].attribute_type[1]",
      { attribute_type: ["ATTRIBUTE_TYPE_CI_SCORE", "ATTRIBUTE_TYPE_CI_SCORE"] },
    ],
    ["missing geometry", "sources[0].geometry", { geometry: null }],
    ["geometry with no kind", "sources[0].geometry", { geometry: {} }],
    ["missing end_at", "sources[0].end_at", { end_at: null }],
    ["end_at equal to start_at", "sources[0].end_at", { end_at: ts("2024-01-01T00:00:00Z") }],
    ["end_at before start_at", "sources[0].end_at", { end_at: ts("2023-12-31T23:59:59.999Z") }],
    ["negative nanos", "sources[0].start_at", { start_at: { seconds: "1704067200", nanos: -1 } }],
    ["seconds past year 9999", "sources[0].end_at", { end_at: { seconds: "253402300800", nanos: 0 } }],
  ])("%s → %s", async (_name, field, overrides) => {
    const violations = await rejected(service, [sourceInput(uniqueAlt(), overrides)]);
    expect(fields(violations)).toEqual([field]);
  });

  it("geometry rules: range, ring size, distinct vertices, self-intersection, holes, shared edges", async () => {
    const R0 = "sources[0].geometry.polygon.rings[0]";
    const cases: [object, [string, RegExp][]][] = [
      [polygon([0, 0, 181, 0, 1, 1, 0, 0]), [[`${R0}.coordinates[2]`, /out of range/]]],
      [polygon([0, 0, 1, 91, 1, 1, 0, 0]), [[`${R0}.coordinates[2]`, /out of range/]]],
      [
        polygon([0, 0, 1, 0, 0, 0]),
        [
          [R0, /has 3 positions; a ring needs at least 4/],
          [R0, /only 2 distinct vertices/],
        ],
      ],
      [polygon([0, 0, 1, 0, 1, 0, 0, 0]), [[R0, /only 2 distinct vertices/]]],
      [{ polygon: { rings: [] } }, [["sources[0].geometry.polygon", /no rings/]]],
      [{ multi_polygon: { polygons: [] } }, [["sources[0].geometry.multi_polygon", /no polygons/]]],
    ];
    for (const [geometry, expected] of cases) {
      const violations = await rejected(service, [sourceInput(uniqueAlt(), { geometry })]);
      expect(
        violations.map((v) => [v.field, v.description]),
        JSON.stringify(geometry),
      ).toEqual(expected.map(([field, description]) => [field, expect.stringMatching(description)]));
    }

    // Topology: the path names at least the geometry.
    const bowtie = await rejected(service, [
      sourceInput(uniqueAlt(), { geometry: polygon([0, 0, 1, 1, 1, 0, 0, 1, 0, 0]) }),
    ]);
    expect(bowtie).toHaveLength(1);
    expect(bowtie[0].field.startsWith("sources[0].geometry.polygon")).toBe(true);
    expect(bowtie[0].description).toMatch(/self-intersect/i);

    const holeOutside = await rejected(service, [
      sourceInput(uniqueAlt(), { geometry: polygon([0, 0, 1, 0, 1, 1, 0, 1, 0, 0], [2, 2, 3, 2, 3, 3, 2, 3, 2, 2]) }),
    ]);
    expect(holeOutside).toHaveLength(1);
    expect(holeOutside[0].field.startsWith("sources[0].geometry.polygon")).toBe(true);

    const sharedEdge = {
      multi_polygon: {
        polygons: [{ rings: [ring(0, 0, 1, 0, 1, 1, 0, 1, 0, 0)] }, { rings: [ring(1, 0, 2, 0, 2, 1, 1, 1, 1, 0)] }],
      },
    };
    const shared = await rejected(service, [sourceInput(uniqueAlt(), { geometry: sharedEdge })]);
    expect(shared).toHaveLength(1);
    expect(shared[0].field.startsWith("sources[0].geometry.multi_polygon")).toBe(true);
    expect(shared[0].description).toMatch(/dissolv/i);
  });

  it("lists every violation of every source at once", async () => {
    const violations = await rejected(service, [
      sourceInput("", {
        outcome_reporting_year: 5,
        source_type: 42,
        geometry: polygon([0, 0, 1, 0, 1, 1, 0, 1, 0, 0.5]),
      }),
      sourceInput(uniqueAlt()),
      sourceInput(uniqueAlt(), { start_at: null, end_at: null, tags: [""] }),
    ]);
    expect(fields(violations).sort()).toEqual(
      [
        "sources[0].alt_id",
        "sources[0].outcome_reporting_year",
        "sources[0].source_type",
        "sources[0].geometry.polygon.rings[0]",
        "sources[2].tags[0]",
        "sources[2].start_at",
        "sources[2].end_at",
      ].sort(),
    );
  });

  it("an empty request → the sources field", async () => {
    expect(fields(await rejected(service, []))).toEqual(["sources"]);
  });

  it("1,001 sources → INVALID_ARGUMENT on sources; 1,000 are accepted", async () => {
    const token = await server.userToken(`acct-${service}-thousand`);
    const tooMany = Array.from({ length: 1001 }, (_, i) => sourceInput(`k-${i}`));
    const outcome = await client.call(service, "CreateSources", { sources: tooMany }, token);
    expect(outcome.code).toBe(grpc.status.INVALID_ARGUMENT);
    const violations = fieldViolations(outcome);
    expect(fields(violations)).toEqual(["sources"]);
    expect(violations[0].description).toContain("1001");
    expect((await client.ok(service, "ListSources", {}, token)).sources).toEqual([]);

    const created = await client.ok(service, "CreateSources", { sources: tooMany.slice(0, 1000) }, token);
    expect(created.sources).toHaveLength(1000);
  });

  it("stores nothing when one source of many is invalid", async () => {
    const account = `acct-${service}-atomic`;
    const token = await server.userToken(account);
    await rejected(
      service,
      [sourceInput("ok-1"), sourceInput("ok-2"), sourceInput("bad", { end_at: ts("2000-01-01T00:00:00Z") })],
      account,
    );
    expect((await client.ok(service, "ListSources", {}, token)).sources).toEqual([]);
  });

  it("an alt_id already stored → ALREADY_EXISTS (6) naming it, and nothing of the request stored", async () => {
    const account = `acct-${service}-taken`;
    const token = await server.userToken(account);
    const [first] = (await client.ok(service, "CreateSources", { sources: [sourceInput("taken-1")] }, token)).sources;
    const outcome = await client.call(
      service,
      "CreateSources",
      { sources: [sourceInput("fresh-1"), sourceInput("taken-1"), sourceInput("fresh-2")] },
      token,
    );
    expect(outcome.code).toBe(grpc.status.ALREADY_EXISTS);
    const violations = fieldViolations(outcome);
    expect(fields(violations)).toEqual(["sources[1].alt_id"]);
    expect(violations[0].description).toContain("taken-1");
    const listed = (await client.ok(service, "ListSources", {}, token)).sources;
    expect(listed.map((s: { id: string }) => s.id)).toEqual([first.id]);
    // Another account may use the same alt_id.
    const other = await server.userToken(`${account}-other`);
    expect((await client.call(service, "CreateSources", { sources: [sourceInput("taken-1")] }, other)).code).toBe(
      grpc.status.OK,
    );
  });

  it("the status details trailer is a google.rpc.Status whose code and message match the call", async () => {
    const token = await server.userToken("acct-status");
    const outcome = await client.call(service, "CreateSources", { sources: [sourceInput("", {})] }, token);
    expect(outcome.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = statusDetails(outcome);
    expect(status?.code).toBe(3);
    expect(status?.message).toBe("sources[0].alt_id: alt_id is required");
    // The standard type (contract §15); the old sourceledger.v2.BadRequest is no longer sent.
    expect(status?.details.map((d) => d.typeUrl)).toEqual([BAD_REQUEST_TYPE_URL]);
  });
});

describe("Connect's clients read the same BadRequest", () => {
  let grpcClient: Client<typeof SourceLedgerService>;
  let connectClient: Client<typeof SourceLedgerService>;

  beforeAll(() => {
    grpcClient = createClient(SourceLedgerService, createGrpcTransport({ baseUrl: server.baseUrl })); // gRPC is always HTTP/2 (h2c here)
    connectClient = createClient(
      SourceLedgerService,
      createConnectTransport({ baseUrl: server.baseUrl, httpVersion: "1.1" }),
    );
  });

  const closed = [0, 0, 0.01, 0, 0.01, 0.01, 0, 0.01, 0, 0];
  const input = (altId: string, extra: object = {}) => ({
    altId,
    geometry: { kind: { case: "polygon" as const, value: { rings: [{ coordinates: closed }] } } },
    startAt: { seconds: 1704067200n, nanos: 0 },
    endAt: { seconds: 1735689600n, nanos: 0 },
    ...extra,
  });

  async function error(promise: Promise<unknown>): Promise<ConnectError> {
    try {
      await promise;
    } catch (e) {
      return ConnectError.from(e);
    }
    throw new Error("expected the call to fail");
  }

  it("gRPC, Connect JSON and grpc-js agree on code and field violations", async () => {
    const token = await server.userToken("acct-parity");
    const headers = { authorization: `Bearer ${token}` };
    const request = {
      sources: [
        input("p-1", {
          geometry: {
            kind: { case: "polygon" as const, value: { rings: [{ coordinates: [0, 0, 1, 0, 1, 1, 0, 1, 0, 0.5] }] } },
          },
        }),
        input("p-2", { startAt: undefined }),
        input("p-1"),
        input("p-4", { sourceType: 99, attributeType: [3, 99] }),
      ],
    };
    const expected = [
      "sources[0].geometry.polygon.rings[0]",
      "sources[1].start_at",
      "sources[2].alt_id",
      "sources[3].source_type",
      "sources[3].attribute_type[1]",
    ];

    const viaGrpc = await error(grpcClient.createSources(request, { headers }));
    expect(viaGrpc.code).toBe(Code.InvalidArgument);
    const grpcDetails = viaGrpc.findDetails(BadRequestSchema);
    expect(grpcDetails).toHaveLength(1);
    const grpcViolations = grpcDetails[0].fieldViolations.map(({ field, description }) => ({ field, description }));
    expect(grpcViolations.map((v) => v.field).sort()).toEqual([...expected].sort());

    const viaConnect = await error(connectClient.createSources(request, { headers }));
    expect(viaConnect.code).toBe(Code.InvalidArgument);
    expect(viaConnect.rawMessage).toBe(viaGrpc.rawMessage);
    const connectViolations = viaConnect
      .findDetails(BadRequestSchema)[0]
      .fieldViolations.map(({ field, description }) => ({ field, description }));
    expect(connectViolations).toEqual(grpcViolations);

    const viaGrpcJs = await client.call(
      "SourceLedgerService",
      "CreateSources",
      {
        sources: [
          sourceInput("p-1", { geometry: polygon([0, 0, 1, 0, 1, 1, 0, 1, 0, 0.5]) }),
          sourceInput("p-2", { start_at: null }),
          sourceInput("p-1"),
          sourceInput("p-4", { source_type: 99, attribute_type: [3, 99] }),
        ],
      },
      token,
    );
    expect(viaGrpcJs.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(viaGrpcJs)).toEqual(grpcViolations);
  });

  it("Connect JSON names the detail google.rpc.BadRequest", async () => {
    const token = await server.userToken("acct-parity-json");
    const response = await server.request("POST", "/sourceledger.v2.SourceLedgerService/CreateSources", {
      token,
      json: { sources: [{ altId: "" }] },
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { code: string; details: { type: string; value: string }[] };
    expect(body.code).toBe("invalid_argument");
    expect(body.details.map((d) => d.type)).toEqual(["google.rpc.BadRequest"]);
    const decoded = fromBinary(BadRequestSchema, Buffer.from(body.details[0].value, "base64"));
    expect(decoded.fieldViolations.find((v) => v.field === "sources[0].alt_id")?.description).toBe(
      "alt_id is required",
    );
  });

  it("ALREADY_EXISTS carries the BadRequest detail over Connect too", async () => {
    const headers = { authorization: `Bearer ${await server.userToken("acct-parity-taken")}` };
    await connectClient.createSources({ sources: [input("dup")] }, { headers });
    const viaConnect = await error(connectClient.createSources({ sources: [input("dup")] }, { headers }));
    expect(viaConnect.code).toBe(Code.AlreadyExists);
    expect(viaConnect.findDetails(BadRequestSchema)[0].fieldViolations.map((v) => v.field)).toEqual([
      "sources[0].alt_id",
    ]);
    const viaGrpc = await error(grpcClient.createSources({ sources: [input("dup")] }, { headers }));
    expect(viaGrpc.code).toBe(Code.AlreadyExists);
    expect(viaGrpc.findDetails(BadRequestSchema)[0].fieldViolations.map((v) => v.field)).toEqual(["sources[0].alt_id"]);
  });
});

// polygonGeometry is the builder used for valid shapes elsewhere; keep one valid control case here.
it("a valid control source is accepted in both services", async () => {
  const token = await server.userToken("acct-control");
  for (const service of SERVICES) {
    const outcome = await client.call(
      service,
      "CreateSources",
      { sources: [sourceInput(uniqueAlt(), { geometry: polygonGeometry(5, 5) })] },
      token,
    );
    expect(outcome.code).toBe(grpc.status.OK);
  }
});

describe("Connect JSON: enums by their full names only", () => {
  const body = (sourceType: string, altId: string) =>
    JSON.stringify({
      sources: [
        {
          altId,
          sourceType,
          geometry: { polygon: { rings: [{ coordinates: [0, 0, 0.01, 0, 0.01, 0.01, 0, 0.01, 0, 0] }] } },
          startAt: "2024-01-01T00:00:00Z",
          endAt: "2025-01-01T00:00:00Z",
        },
      ],
    });
  const post = async (json: string, token: string) =>
    fetch(`${server.baseUrl}/sourceledger.v2.SandboxSourceLedgerService/CreateSources`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: json,
    });

  it("a short enum name (FIELD) is refused as invalid_argument, not silently dropped; SOURCE_TYPE_FIELD is kept", async () => {
    const token = await server.userToken(uniqueAlt("acct-enum"));
    const refused = await post(body("FIELD", "enum-short"), token);
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { code: string }).code).toBe("invalid_argument");

    const accepted = await post(body("SOURCE_TYPE_FIELD", "enum-full"), token);
    expect(accepted.status).toBe(200);
    const created = (await accepted.json()) as { sources: { altId: string; sourceType: string }[] };
    expect(created.sources.map((s) => [s.altId, s.sourceType])).toEqual([["enum-full", "SOURCE_TYPE_FIELD"]]);
  });
});

describe("message size limit on the Connect routes (docs/api.md §5: 10 MiB)", () => {
  it("HTTP/2: a Connect JSON message over 10 MiB → 429 resource_exhausted, then the stream is closed, so the upload stops", async () => {
    const token = await server.userToken(uniqueAlt("acct-size-h2"));
    const body = Buffer.from(`{${" ".repeat(10.5 * 1024 * 1024)}}`);
    const session = http2.connect(server.baseUrl);
    try {
      const stream = session.request({
        ":method": "POST",
        ":path": "/sourceledger.v2.SourceLedgerService/ListSources",
        "content-type": "application/json",
        authorization: `Bearer ${token}`,
      });
      stream.on("data", () => {});
      stream.on("error", () => {});
      // All of it, whatever is read: a client that finishes its upload before reading the answer.
      stream.end(body);
      const status = await new Promise<number>((resolve) =>
        stream.on("response", (h) => resolve(Number(h[":status"]))),
      );
      expect(status).toBe(429);
      // The server resets the stream (NO_ERROR) once the answer is out, instead of leaving the rest
      // of the upload waiting on a flow-control window nobody opens.
      const deadline = performance.now() + 3_000;
      while (!stream.closed && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(stream.closed).toBe(true);
      expect(stream.rstCode).toBe(http2.constants.NGHTTP2_NO_ERROR);
    } finally {
      session.destroy();
    }
  });

  it("a Connect JSON CreateSources over 10 MiB → resource_exhausted, nothing stored", async () => {
    const token = await server.userToken(uniqueAlt("acct-size"));
    const body = JSON.stringify({ sources: [{ altId: "too-big", tags: ["x".repeat(10 * 1024 * 1024 + 1)] }] });
    const res = await fetch(`${server.baseUrl}/sourceledger.v2.SourceLedgerService/CreateSources`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body,
    });
    expect(((await res.json()) as { code: string }).code).toBe("resource_exhausted");
    const listed = await fetch(`${server.baseUrl}/sources`, { headers: { authorization: `Bearer ${token}` } });
    expect(await listed.json()).toEqual([]);
  });
});
