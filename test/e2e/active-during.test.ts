/**
 * The `active_during` list filter (docs/api.md §13): sources whose [start_at, end_at) period meets
 * a closed time range, in OGC API's `datetime` syntax (an instant, `a/b`, `a/..`, `../b`). Over REST
 * (query and search body), gRPC (ListSources' TimeRange), and OGC API items as `datetime`, in both
 * environments; malformed and upside-down ranges are refused where each adapter refuses.
 */
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";
import {
  collection,
  createOk,
  ENVIRONMENTS,
  type Environment,
  expectProblem,
  expectViolation,
  feature,
  inListOrder,
  type Json,
  list,
  pathOf,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let grpcClient: LedgerGrpc;
let token: string;
/** Per environment: sources active in 2023, in the first half of 2024, in the second half, and always. */
const made = new Map<Environment, Record<"y2023" | "h1" | "h2" | "always", SourceRecord>>();

const H1 = ["2024-01-01T00:00:00Z", "2024-07-01T00:00:00Z"];
const H2 = ["2024-07-01T00:00:00Z", "2025-01-01T00:00:00Z"];

beforeAll(async () => {
  server = await startTestServer();
  grpcClient = new LedgerGrpc(server.port);
  token = await server.userToken(unique("during"));
  for (const env of ENVIRONMENTS) {
    const [y2023, h1, h2, always] = await createOk(
      server,
      token,
      collection([
        feature(unique("y2023"), { start_at: "2023-01-01T00:00:00Z", end_at: "2024-01-01T00:00:00Z" }),
        feature(unique("h1"), { start_at: H1[0], end_at: H1[1] }),
        feature(unique("h2"), { start_at: H2[0], end_at: H2[1] }),
        feature(unique("always"), { start_at: "0001-01-01T00:00:00Z", end_at: "9999-12-31T00:00:00Z" }),
      ]),
      env,
    );
    made.set(env, { y2023, h1, h2, always });
  }
});

afterAll(async () => {
  grpcClient.close();
  await server.close();
});

const ids = (records: { id: string }[]) => records.map((r) => r.id);

describe.each(ENVIRONMENTS)("active_during (%s)", (env) => {
  const cases: [string, ("y2023" | "h1" | "h2" | "always")[]][] = [
    ["2024-03-01T00:00:00Z", ["h1", "always"]],
    ["2024-07-01T00:00:00Z", ["h2", "always"]],
    ["2024-06-30T00:00:00Z/2024-07-01T00:00:00Z", ["h1", "h2", "always"]],
    ["2023-12-31T23:59:59Z/2024-01-01T00:00:00Z", ["y2023", "h1", "always"]],
    ["../2023-06-01T00:00:00Z", ["y2023", "always"]],
    ["2024-07-01T00:00:00Z/..", ["h2", "always"]],
    ["../..", ["y2023", "h1", "h2", "always"]],
    ["2030-01-01T00:00:00Z/2031-01-01T00:00:00Z", ["always"]],
  ];

  it.each(cases)("GET /sources?active_during=%s", async (range, expected) => {
    const sources = made.get(env) as Record<string, SourceRecord>;
    const found = await list(server, token, `active_during=${encodeURIComponent(range)}`, env);
    expect(ids(found)).toEqual(ids(inListOrder(expected.map((k) => sources[k]))));
  });

  it.each(cases)("OGC items ?datetime=%s", async (range, expected) => {
    const sources = made.get(env) as Record<string, SourceRecord>;
    const collectionId = env === "production" ? "sources" : "sandbox-sources";
    const res = await server.request(
      "GET",
      `/ogc/collections/${collectionId}/items?datetime=${encodeURIComponent(range)}`,
      { token },
    );
    expect(res.status).toBe(200);
    const page = (await res.json()) as { features: Json[] };
    expect(page.features.map((f) => f.id)).toEqual(ids(inListOrder(expected.map((k) => sources[k]))));
  });

  it("POST /sources/search takes it in the body, with the area", async () => {
    const { h1 } = made.get(env) as Record<string, SourceRecord>;
    const res = await server.request("POST", pathOf(env, "/search"), {
      token,
      json: { intersects: h1.geometry, active_during: `${H1[0]}/..` },
    });
    expect(res.status).toBe(200);
    expect(ids((await res.json()) as SourceRecord[])).toEqual([h1.id]);
    const none = await server.request("POST", pathOf(env, "/search"), {
      token,
      json: { intersects: h1.geometry, active_during: `../2023-06-01T00:00:00Z` },
    });
    expect(await none.json()).toEqual([]);
  });

  it("ListSources over gRPC takes a TimeRange; either end may be left unset", async () => {
    const service = env === "production" ? "SourceLedgerService" : "SandboxSourceLedgerService";
    const sources = made.get(env) as Record<string, SourceRecord>;
    const seconds = (iso: string) => ({ seconds: String(Date.parse(iso) / 1000), nanos: 0 });
    const closed = await grpcClient.ok(
      service,
      "ListSources",
      { active_during: { start: seconds("2024-06-30T00:00:00Z"), end: seconds("2024-07-01T00:00:00Z") } },
      token,
    );
    expect(closed.sources.map((s: { id: string }) => s.id)).toEqual(
      ids(inListOrder([sources.h1, sources.h2, sources.always])),
    );
    const openStart = await grpcClient.ok(
      service,
      "ListSources",
      { active_during: { end: seconds("2023-06-01T00:00:00Z") } },
      token,
    );
    expect(openStart.sources.map((s: { id: string }) => s.id)).toEqual(
      ids(inListOrder([sources.y2023, sources.always])),
    );
    const upsideDown = await grpcClient.call(
      service,
      "ListSources",
      { active_during: { start: seconds("2024-07-01T00:00:00Z"), end: seconds("2024-01-01T00:00:00Z") } },
      token,
    );
    expect(upsideDown.code).toBe(grpc.status.INVALID_ARGUMENT);
    // grpc-js leaves grpc-message percent-encoded (docs/api.md §9).
    expect(decodeURIComponent(upsideDown.details)).toContain(
      "active_during: the range starts (2024-07-01T00:00:00.000Z) after it ends",
    );
  });

  it("malformed or upside down: 422 at /query/active_during over REST, 400 at /query/datetime over OGC", async () => {
    await expectViolation(
      await server.request("GET", pathOf(env, "?active_during=2024-01-01"), { token }),
      "/query/active_during",
      "active_during must be an RFC 3339 date-time, or an interval start/end of two",
    );
    await expectViolation(
      await server.request("GET", pathOf(env, `?active_during=${encodeURIComponent(`${H2[0]}/${H1[0]}`)}`), {
        token,
      }),
      "/query/active_during",
      "the range starts (2024-07-01T00:00:00.000Z) after it ends (2024-01-01T00:00:00.000Z)",
    );
    const collectionId = env === "production" ? "sources" : "sandbox-sources";
    for (const [datetime, detail] of [
      ["yesterday", "datetime must be an RFC 3339 date-time"],
      [`${H2[0]}/${H1[0]}`, "the range starts (2024-07-01T00:00:00.000Z) after it ends"],
    ]) {
      const problem = await expectProblem(
        await server.request("GET", `/ogc/collections/${collectionId}/items?datetime=${encodeURIComponent(datetime)}`, {
          token,
        }),
        400,
        "invalid_argument",
      );
      expect(problem.errors).toHaveLength(1);
      expect(problem.errors[0].pointer).toBe("/query/datetime");
      expect(problem.errors[0].detail).toContain(detail);
    }
  });
});
