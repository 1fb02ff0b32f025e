/**
 * CreateSources / ListSources / GetSource / DeleteSource over gRPC (grpc-js + proto-loader, an
 * independent client) in both services: typed geometry, timestamps, enums, optional presence,
 * ids, list filters and order, delete keys, environment separation, admin behaviour.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  fieldViolations,
  grpc,
  LedgerGrpc,
  PRODUCTION_ID,
  SANDBOX_ID,
  SERVICES,
  type ServiceName,
  sourceInput,
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

const ID_PATTERN: Record<ServiceName, RegExp> = {
  SourceLedgerService: PRODUCTION_ID,
  SandboxSourceLedgerService: SANDBOX_ID,
};

type Source = Record<string, any>;

async function create(service: ServiceName, token: string, sources: object[], extra: object = {}): Promise<Source[]> {
  const response = await client.ok<{ sources: Source[] }>(service, "CreateSources", { sources, ...extra }, token);
  return response.sources;
}

async function list(service: ServiceName, token: string, request: object = {}): Promise<Source[]> {
  const response = await client.ok<{ sources: Source[] }>(service, "ListSources", request, token);
  return response.sources;
}

function tsMs(t: { seconds: string; nanos: number }): number {
  return Number(t.seconds) * 1000 + Math.floor(t.nanos / 1e6);
}

function compareListOrder(a: Source, b: Source): number {
  const d = tsMs(a.created_at) - tsMs(b.created_at);
  if (d !== 0) return d;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

describe.each(SERVICES)("%s over grpc-js", (service) => {
  const tag = service === "SourceLedgerService" ? "prod" : "sbx";

  it("creates a Polygon source with every field set and returns it typed, exactly as sent", async () => {
    const account = `acct-${tag}-full`;
    const token = await server.userToken(account);
    // biome-ignore-start lint/correctness/noPrecisionLoss: digits past a double's precision, on purpose
    const coordinates = [
      12.345678901234567, -45.678901234567891, 12.355678901234567, -45.678901234567891, 12.355678901234567,
      -45.668901234567891, 12.345678901234567, -45.668901234567891, 12.345678901234567, -45.678901234567891,
    ];
    // biome-ignore-end lint/correctness/noPrecisionLoss: -
    const before = Date.now();
    const [created] = await create(service, token, [
      {
        alt_id: "full-1",
        methodology: "VM0042",
        tags: ["north", "wetland", "ünïcödé"],
        steward_id: "steward-7",
        project_id: "project-9",
        outcome_reporting_year: 2030,
        source_type: "SOURCE_TYPE_FACILITY",
        attribute_type: ["ATTRIBUTE_TYPE_WATER_QUANTITY", "ATTRIBUTE_TYPE_CARBON_REMOVAL"],
        geometry_source: "GEOMETRY_SOURCE_AUTHORITATIVE_GIS",
        geometry: { polygon: { rings: [{ coordinates }] } },
        start_at: { seconds: "1704067200", nanos: 123_000_000 },
        end_at: ts("2025-06-30T12:34:56.789Z"),
      },
    ]);
    const after = Date.now();

    expect(created.id).toMatch(ID_PATTERN[service]);
    expect(created).toMatchObject({
      alt_id: "full-1",
      methodology: "VM0042",
      tags: ["north", "wetland", "ünïcödé"],
      steward_id: "steward-7",
      project_id: "project-9",
      outcome_reporting_year: 2030,
      source_type: "SOURCE_TYPE_FACILITY",
      attribute_type: ["ATTRIBUTE_TYPE_WATER_QUANTITY", "ATTRIBUTE_TYPE_CARBON_REMOVAL"],
      geometry_source: "GEOMETRY_SOURCE_AUTHORITATIVE_GIS",
      geometry: { kind: "polygon", polygon: { rings: [{ coordinates }] } },
      start_at: { seconds: "1704067200", nanos: 123_000_000 },
      end_at: { seconds: String(Date.parse("2025-06-30T12:34:56Z") / 1000), nanos: 789_000_000 },
      account_id: account,
      created_by: `Client ${account}`,
      updated_by: `Client ${account}`,
      conflict: false,
      unep_overlap: null,
    });
    // Same doubles, bit for bit (not merely close).
    expect(created.geometry.polygon.rings[0].coordinates).toStrictEqual(coordinates);
    expect(created.geometry.multi_polygon ?? null).toBeNull();
    expect(tsMs(created.created_at)).toBeGreaterThanOrEqual(before - 1);
    expect(tsMs(created.created_at)).toBeLessThanOrEqual(after + 1);
    expect(created.updated_at).toEqual(created.created_at);
    // Millisecond precision.
    expect(created.created_at.nanos % 1_000_000).toBe(0);

    const got = await client.ok<{ source: Source }>(service, "GetSource", { id: created.id }, token);
    expect(got.source).toEqual(created);
    expect(await list(service, token)).toEqual([created]);
  });

  it("takes created_by/updated_by from client_name, else from sub", async () => {
    const account = `acct-${tag}-actor`;
    const named = await server.userToken(account, {
      [server.issuer.claim("client_name")]: "Named Client",
      sub: "sub-1",
    });
    const unnamed = await server.userToken(account, {
      [server.issuer.claim("client_name")]: undefined,
      sub: "machine-7@clients",
    });
    const [a] = await create(service, named, [sourceInput("actor-a")]);
    const [b] = await create(service, unnamed, [sourceInput("actor-b")]);
    expect(a).toMatchObject({ account_id: account, created_by: "Named Client", updated_by: "Named Client" });
    expect(b).toMatchObject({ account_id: account, created_by: "machine-7@clients", updated_by: "machine-7@clients" });
  });

  it("round-trips a MultiPolygon with a hole and keeps ring orientation, order and doubles", async () => {
    const token = await server.userToken(`acct-${tag}-multi`);
    const shell = [30, 10, 30.1, 10, 30.1, 10.1, 30, 10.1, 30, 10];
    // Clockwise hole well inside the shell.
    const hole = [30.02, 10.02, 30.02, 10.05, 30.05, 10.05, 30.05, 10.02, 30.02, 10.02];
    // Second part, counter-clockwise, starting at a different corner, with a consecutive duplicate.
    const part2 = [31.1, 11.1, 31.0, 11.1, 31.0, 11.1, 31.0, 11.0, 31.1, 11.0, 31.1, 11.1];
    const geometry = {
      multi_polygon: {
        polygons: [{ rings: [{ coordinates: shell }, { coordinates: hole }] }, { rings: [{ coordinates: part2 }] }],
      },
    };
    const [created] = await create(service, token, [sourceInput("multi-1", { geometry })]);
    expect(created.geometry).toEqual({ kind: "multi_polygon", ...geometry });
    expect(created.geometry.polygon ?? null).toBeNull();
    const got = await client.ok<{ source: Source }>(service, "GetSource", { id: created.id }, token);
    expect(got.source.geometry).toEqual({ kind: "multi_polygon", ...geometry });
  });

  it("leaves optional fields unset when they were not sent, and keeps explicit presence", async () => {
    const token = await server.userToken(`acct-${tag}-optional`);
    const [bare] = await create(service, token, [sourceInput("bare-1")]);
    for (const field of ["methodology", "steward_id", "project_id", "outcome_reporting_year"]) {
      expect(bare[field], field).toBeUndefined();
      expect(bare[`_${field}`], field).toBeUndefined();
    }
    expect(bare).toMatchObject({
      tags: [],
      attribute_type: [],
      source_type: "SOURCE_TYPE_UNSPECIFIED",
      geometry_source: "GEOMETRY_SOURCE_UNSPECIFIED",
      conflict: false,
      unep_overlap: null,
    });

    const [set] = await create(service, token, [
      sourceInput("set-1", { methodology: "m", steward_id: "s", project_id: "p", outcome_reporting_year: 1000 }),
    ]);
    expect(set).toMatchObject({
      methodology: "m",
      _methodology: "methodology",
      steward_id: "s",
      _steward_id: "steward_id",
      project_id: "p",
      _project_id: "project_id",
      outcome_reporting_year: 1000,
      _outcome_reporting_year: "outcome_reporting_year",
    });
  });

  it("keeps timestamps before 1970 and truncates sub-millisecond nanos to the millisecond", async () => {
    const token = await server.userToken(`acct-${tag}-times`);
    const [created] = await create(service, token, [
      sourceInput("times-1", {
        // 1969-12-31T23:59:59.500Z is seconds -1 + 0.5 s.
        start_at: { seconds: "-2208988800", nanos: 0 },
        end_at: { seconds: "-1", nanos: 500_999_999 },
      }),
    ]);
    expect(created.start_at).toEqual({ seconds: "-2208988800", nanos: 0 });
    expect(created.end_at).toEqual({ seconds: "-1", nanos: 500_000_000 });
  });

  it("returns the records of one request in request order with distinct ids", async () => {
    const token = await server.userToken(`acct-${tag}-order`);
    const alts = Array.from({ length: 25 }, (_, i) => `order-${String(i).padStart(2, "0")}`);
    const created = await create(
      service,
      token,
      alts.map((alt) => sourceInput(alt)),
    );
    expect(created.map((s) => s.alt_id)).toEqual(alts);
    expect(new Set(created.map((s) => s.id)).size).toBe(25);
    for (const s of created) expect(s.id).toMatch(ID_PATTERN[service]);
    // One request, one created_at.
    expect(new Set(created.map((s) => JSON.stringify(s.created_at))).size).toBe(1);
  });

  describe("ListSources filters", () => {
    const account = `acct-${tag}-filters`;
    let token: string;
    let all: Source[];

    beforeAll(async () => {
      token = await server.userToken(account);
      // Three requests so that created_at differs between groups.
      await create(service, token, [
        sourceInput("f-a", {
          methodology: "M1",
          steward_id: "S1",
          project_id: "P1",
          outcome_reporting_year: 2024,
          source_type: "SOURCE_TYPE_FIELD",
          attribute_type: ["ATTRIBUTE_TYPE_CARBON_REMOVAL", "ATTRIBUTE_TYPE_BIODIVERSITY"],
          geometry_source: "GEOMETRY_SOURCE_CUSTODIAN_DRAWN",
        }),
        sourceInput("f-b", {
          methodology: "M2",
          steward_id: "S1",
          project_id: "P2",
          outcome_reporting_year: 2025,
          source_type: "SOURCE_TYPE_SITE",
          attribute_type: ["ATTRIBUTE_TYPE_CI_SCORE"],
          geometry_source: "GEOMETRY_SOURCE_DERIVED",
        }),
      ]);
      await new Promise((r) => setTimeout(r, 5));
      await create(service, token, [
        sourceInput("f-c", {
          methodology: "M1",
          steward_id: "S2",
          project_id: "P1",
          outcome_reporting_year: 2025,
          source_type: "SOURCE_TYPE_FIELD",
          attribute_type: ["ATTRIBUTE_TYPE_BIODIVERSITY"],
          geometry_source: "GEOMETRY_SOURCE_DERIVED",
        }),
        sourceInput("f-d", {}),
      ]);
      await new Promise((r) => setTimeout(r, 5));
      await create(service, token, [
        sourceInput("f-e", {
          methodology: "m1",
          attribute_type: ["ATTRIBUTE_TYPE_WATER_QUALITY", "ATTRIBUTE_TYPE_CARBON_REMOVAL"],
          source_type: "SOURCE_TYPE_DEVICE",
        }),
      ]);
      all = await list(service, token);
    });

    const alts = (sources: Source[]) => sources.map((s) => s.alt_id);

    it("lists everything of the account ordered by created_at, then id", () => {
      expect(all).toHaveLength(5);
      expect([...all].sort(compareListOrder)).toEqual(all);
      // Groups of different requests come in creation order.
      expect(alts(all).slice(0, 2).sort()).toEqual(["f-a", "f-b"]);
      expect(alts(all).slice(2, 4).sort()).toEqual(["f-c", "f-d"]);
      expect(alts(all)[4]).toBe("f-e");
    });

    it.each([
      [{ methodology: "M1" }, ["f-a", "f-c"]],
      [{ methodology: "m1" }, ["f-e"]],
      [{ steward_id: "S1" }, ["f-a", "f-b"]],
      [{ project_id: "P1" }, ["f-a", "f-c"]],
      [{ outcome_reporting_year: 2025 }, ["f-b", "f-c"]],
      [{ source_type: "SOURCE_TYPE_FIELD" }, ["f-a", "f-c"]],
      [{ source_type: "SOURCE_TYPE_PROGRAM" }, []],
      [{ geometry_source: "GEOMETRY_SOURCE_DERIVED" }, ["f-b", "f-c"]],
      [{ attribute_type: ["ATTRIBUTE_TYPE_BIODIVERSITY"] }, ["f-a", "f-c"]],
      [{ attribute_type: ["ATTRIBUTE_TYPE_CARBON_REMOVAL", "ATTRIBUTE_TYPE_CI_SCORE"] }, ["f-a", "f-b", "f-e"]],
      [{ attribute_type: ["ATTRIBUTE_TYPE_CARBON_REMOVAL", "ATTRIBUTE_TYPE_BIODIVERSITY"] }, ["f-a", "f-c", "f-e"]],
      [{ attribute_type: ["ATTRIBUTE_TYPE_RENEWABLE_ENERGY"] }, []],
      [{ methodology: "M1", outcome_reporting_year: 2025 }, ["f-c"]],
      [{ steward_id: "S1", attribute_type: ["ATTRIBUTE_TYPE_BIODIVERSITY"] }, ["f-a"]],
    ])("filter %j", async (filter, expected) => {
      const found = await list(service, token, filter);
      // A record matching several attribute values still comes back once, in list order.
      expect(alts(found)).toEqual(alts(all).filter((a) => expected.includes(a)));
    });

    it("pages with limit and offset over the same order", async () => {
      expect(alts(await list(service, token, { limit: 2 }))).toEqual(alts(all).slice(0, 2));
      expect(alts(await list(service, token, { limit: 2, offset: 2 }))).toEqual(alts(all).slice(2, 4));
      expect(alts(await list(service, token, { limit: 2, offset: 4 }))).toEqual(alts(all).slice(4));
      expect(await list(service, token, { offset: 5 })).toEqual([]);
      expect(alts(await list(service, token, { offset: 0, limit: 1000 }))).toEqual(alts(all));
      expect(alts(await list(service, token, { methodology: "M1", limit: 1, offset: 1 }))).toEqual(["f-c"]);
    });

    it.each([
      [{ limit: 0 }, "limit"],
      [{ limit: 1001 }, "limit"],
      [{ limit: -1 }, "limit"],
      [{ offset: -1 }, "offset"],
      [{ outcome_reporting_year: 999 }, "outcome_reporting_year"],
      [{ methodology: "" }, "methodology"],
      [{ source_type: 99 }, "source_type"],
      [{ geometry_source: 42 }, "geometry_source"],
      [{ attribute_type: ["ATTRIBUTE_TYPE_CI_SCORE", 77] }, "attribute_type[1]"],
    ])("rejects list request %j with INVALID_ARGUMENT on %s", async (request, field) => {
      const outcome = await client.call(service, "ListSources", request, token);
      expect(outcome.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(outcome).map((v) => v.field)).toEqual([field]);
    });
  });

  it("lists 100 records by default and at most 1000", async () => {
    const token = await server.userToken(`acct-${tag}-default-limit`);
    await create(
      service,
      token,
      Array.from({ length: 105 }, (_, i) => sourceInput(`dl-${i}`)),
    );
    expect(await list(service, token)).toHaveLength(100);
    expect(await list(service, token, { limit: 1000 })).toHaveLength(105);
    expect(await list(service, token, { offset: 100 })).toHaveLength(5);
  });

  it("deletes by id: OK with an empty response, then NOT_FOUND for get and a second delete", async () => {
    const token = await server.userToken(`acct-${tag}-delete-id`);
    const [a, b] = await create(service, token, [sourceInput("del-a"), sourceInput("del-b")]);
    const deleted = await client.call(service, "DeleteSource", { id: a.id }, token);
    expect(deleted.code).toBe(grpc.status.OK);
    expect(deleted.response).toEqual({});
    const get = await client.call(service, "GetSource", { id: a.id }, token);
    expect(get.code).toBe(grpc.status.NOT_FOUND);
    expect((await client.call(service, "DeleteSource", { id: a.id }, token)).code).toBe(grpc.status.NOT_FOUND);
    expect((await list(service, token)).map((s) => s.id)).toEqual([b.id]);
  });

  it("deletes by alt_id, which frees the alt_id for a new source", async () => {
    const token = await server.userToken(`acct-${tag}-delete-alt`);
    const [first] = await create(service, token, [sourceInput("reuse-me")]);
    expect((await client.call(service, "DeleteSource", { alt_id: "reuse-me" }, token)).code).toBe(grpc.status.OK);
    expect((await client.call(service, "GetSource", { id: first.id }, token)).code).toBe(grpc.status.NOT_FOUND);
    expect((await client.call(service, "DeleteSource", { alt_id: "reuse-me" }, token)).code).toBe(
      grpc.status.NOT_FOUND,
    );
    const [second] = await create(service, token, [sourceInput("reuse-me")]);
    expect(second.id).not.toBe(first.id);
    expect(second.alt_id).toBe("reuse-me");
  });

  it("rejects a delete without a key, or with an empty one, as INVALID_ARGUMENT", async () => {
    const token = await server.userToken(`acct-${tag}-delete-key`);
    const none = await client.call(service, "DeleteSource", {}, token);
    expect(none.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(none).map((v) => v.field)).toEqual(["id"]);
    const emptyId = await client.call(service, "DeleteSource", { id: "" }, token);
    expect(emptyId.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(emptyId).map((v) => v.field)).toEqual(["id"]);
    const emptyAlt = await client.call(service, "DeleteSource", { alt_id: "" }, token);
    expect(emptyAlt.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(emptyAlt).map((v) => v.field)).toEqual(["alt_id"]);
    const get = await client.call(service, "GetSource", { id: "" }, token);
    expect(get.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(get).map((v) => v.field)).toEqual(["id"]);
  });

  it("answers NOT_FOUND for unknown ids and alt_ids", async () => {
    const token = await server.userToken(`acct-${tag}-unknown`);
    for (const id of ["src_01ARZ3NDEKTSV4RRFFQ69G5FAV", "sandbox_2b1e0f7e-8c4e-4d7a-9c39-8f7f5a2f3b11", "nope"]) {
      const get = await client.call(service, "GetSource", { id }, token);
      expect(get.code).toBe(grpc.status.NOT_FOUND);
      expect(get.details).toContain(id);
      expect((await client.call(service, "DeleteSource", { id }, token)).code).toBe(grpc.status.NOT_FOUND);
    }
    expect((await client.call(service, "DeleteSource", { alt_id: "never-created" }, token)).code).toBe(
      grpc.status.NOT_FOUND,
    );
  });
});

describe("a coordinate of -0 (docs/api.md §4.4: written 0)", () => {
  it.each(SERVICES)("%s: created over gRPC with -0, answered 0 by GetSource in binary protobuf", async (service) => {
    const token = await server.userToken(uniqueAlt("acct-negative-zero"));
    const ring = [-0, -0, 0.01, -0, 0.01, 0.01, -0, 0.01, -0, -0];
    const [created] = await create(service, token, [
      sourceInput(uniqueAlt("nz"), { geometry: { polygon: { rings: [{ coordinates: ring }] } } }),
    ]);
    const got = await client.ok<{ source: Source }>(service, "GetSource", { id: created.id }, token);
    for (const answered of [created, got.source]) {
      const coordinates: number[] = answered.geometry.polygon.rings[0].coordinates;
      expect(coordinates).toHaveLength(10);
      expect(coordinates.filter((c) => Object.is(c, -0))).toEqual([]);
    }
  });
});

describe("production and sandbox never resolve each other's ids", () => {
  it("sandbox ids are NOT_FOUND in production and production ids NOT_FOUND in the sandbox", async () => {
    const token = await server.userToken("acct-cross-env");
    const [prod] = await create("SourceLedgerService", token, [sourceInput("same-alt")]);
    const [sbx] = await create("SandboxSourceLedgerService", token, [sourceInput("same-alt")]);
    expect(prod.id).toMatch(PRODUCTION_ID);
    expect(sbx.id).toMatch(SANDBOX_ID);

    for (const [service, foreign] of [
      ["SourceLedgerService", sbx.id],
      ["SandboxSourceLedgerService", prod.id],
    ] as const) {
      expect((await client.call(service, "GetSource", { id: foreign }, token)).code).toBe(grpc.status.NOT_FOUND);
      expect((await client.call(service, "DeleteSource", { id: foreign }, token)).code).toBe(grpc.status.NOT_FOUND);
    }
    // Same alt_id in both environments is fine, and each list holds only its own.
    expect((await list("SourceLedgerService", token)).map((s) => s.id)).toEqual([prod.id]);
    expect((await list("SandboxSourceLedgerService", token)).map((s) => s.id)).toEqual([sbx.id]);
    // Deleting by alt_id in the sandbox leaves production alone.
    expect((await client.call("SandboxSourceLedgerService", "DeleteSource", { alt_id: "same-alt" }, token)).code).toBe(
      grpc.status.OK,
    );
    expect(
      (await client.ok<{ source: Source }>("SourceLedgerService", "GetSource", { id: prod.id }, token)).source.id,
    ).toBe(prod.id);
  });

  it("production rejects the sandbox-only id list filter; the sandbox applies it and alt_id", async () => {
    const token = await server.userToken("acct-sandbox-filters");
    const prod = await client.call("SourceLedgerService", "ListSources", { id: "x", alt_id: "y" }, token);
    expect(prod.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(prod).map((v) => v.field)).toEqual(["id"]);

    const created = await create("SandboxSourceLedgerService", token, [
      sourceInput("sf-1"),
      sourceInput("sf-2"),
      sourceInput("sf-3"),
    ]);
    const byId = await list("SandboxSourceLedgerService", token, { id: created[1].id });
    expect(byId.map((s) => s.alt_id)).toEqual(["sf-2"]);
    const byAlt = await list("SandboxSourceLedgerService", token, { alt_id: "sf-3" });
    expect(byAlt.map((s) => s.id)).toEqual([created[2].id]);
    expect(await list("SandboxSourceLedgerService", token, { alt_id: "sf-3", id: created[0].id })).toEqual([]);
  });
});

describe.each(SERVICES)("%s admin behaviour", (service) => {
  const tag = service === "SourceLedgerService" ? "prod" : "sbx";
  const accountA = `acct-${tag}-admin-a`;
  const accountB = `acct-${tag}-admin-b`;
  let admin: string;
  let a: Source;
  let b: Source;

  beforeAll(async () => {
    admin = await server.adminToken();
    [a] = await create(service, await server.userToken(accountA), [
      sourceInput("shared-alt", { methodology: "admin-test" }),
    ]);
    [b] = await create(service, await server.userToken(accountB), [
      sourceInput("shared-alt", { methodology: "admin-test" }),
    ]);
  });

  it("lists across accounts, or one account with account_id", async () => {
    const everything = await list(service, admin, { methodology: "admin-test", limit: 1000 });
    // Two accounts' sources may share a millisecond; then the id decides (random UUIDs in the sandbox).
    expect(everything.map((s) => s.id)).toEqual([a, b].sort(compareListOrder).map((s) => s.id));
    expect((await list(service, admin, { methodology: "admin-test", account_id: accountB })).map((s) => s.id)).toEqual([
      b.id,
    ]);
    expect(await list(service, admin, { account_id: "acct-nobody" })).toEqual([]);
  });

  it("reads any account's source by id", async () => {
    const got = await client.ok<{ source: Source }>(service, "GetSource", { id: b.id }, admin);
    expect(got.source).toMatchObject({ id: b.id, account_id: accountB });
  });

  it("creates for the account named by account_id, as itself", async () => {
    const [created] = await create(service, admin, [sourceInput("made-by-admin")], { account_id: accountA });
    expect(created).toMatchObject({ account_id: accountA, created_by: "Admin", updated_by: "Admin" });
    const owner = await server.userToken(accountA);
    expect((await client.ok<{ source: Source }>(service, "GetSource", { id: created.id }, owner)).source.id).toBe(
      created.id,
    );
  });

  it("without an account claim, must name the account on create (INVALID_ARGUMENT on account_id)", async () => {
    const outcome = await client.call(service, "CreateSources", { sources: [sourceInput(uniqueAlt())] }, admin);
    expect(outcome.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(outcome).map((v) => v.field)).toEqual(["account_id"]);
  });

  it("with an account claim, creates in its own account when account_id is absent", async () => {
    const adminWithAccount = await server.adminToken({ [server.issuer.claim("account_id")]: "acct-admin-own" });
    const [created] = await create(service, adminWithAccount, [sourceInput(uniqueAlt())]);
    expect(created.account_id).toBe("acct-admin-own");
  });

  it("needs account_id to delete by alt_id, and then deletes only in that account", async () => {
    const missing = await client.call(service, "DeleteSource", { alt_id: "shared-alt" }, admin);
    expect(missing.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(missing).map((v) => v.field)).toEqual(["account_id"]);

    const [victim] = await create(service, await server.userToken(accountA), [sourceInput("admin-deletes-me")]);
    const [survivor] = await create(service, await server.userToken(accountB), [sourceInput("admin-deletes-me")]);
    expect(
      (await client.call(service, "DeleteSource", { alt_id: "admin-deletes-me", account_id: accountA }, admin)).code,
    ).toBe(grpc.status.OK);
    expect((await client.call(service, "GetSource", { id: victim.id }, admin)).code).toBe(grpc.status.NOT_FOUND);
    expect((await client.call(service, "GetSource", { id: survivor.id }, admin)).code).toBe(grpc.status.OK);
  });

  it("deletes any account's source by id", async () => {
    const [victim] = await create(service, await server.userToken(accountB), [sourceInput(uniqueAlt())]);
    expect((await client.call(service, "DeleteSource", { id: victim.id }, admin)).code).toBe(grpc.status.OK);
    expect((await client.call(service, "GetSource", { id: victim.id }, await server.userToken(accountB))).code).toBe(
      grpc.status.NOT_FOUND,
    );
  });

  it("refuses account_id from a non-admin on every method that has it", async () => {
    const user = await server.userToken(accountA);
    const calls = [
      ["CreateSources", { sources: [sourceInput(uniqueAlt())], account_id: accountB }],
      ["ListSources", { account_id: accountB }],
      ["DeleteSource", { id: b.id, account_id: accountB }],
    ] as const;
    for (const [method, request] of calls) {
      const outcome = await client.call(service, method, request, user);
      expect(outcome.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(
        fieldViolations(outcome).map((v) => v.field),
        method,
      ).toEqual(["account_id"]);
    }
    // Nothing was deleted.
    expect((await client.call(service, "GetSource", { id: b.id }, admin)).code).toBe(grpc.status.OK);
  });

  it("rejects an empty account_id from an admin", async () => {
    const outcome = await client.call(service, "ListSources", { account_id: "" }, admin);
    expect(outcome.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(outcome).map((v) => v.field)).toEqual(["account_id"]);
  });
});
