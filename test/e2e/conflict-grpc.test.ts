/**
 * Conflict detection (docs/api.md §8) over gRPC (grpc-js + proto-loader against the real server):
 * the same hand-built cases as the REST suite, both sides flagged across accounts with the other
 * account's source invisible, delete re-evaluation, robustness of the overlay (never INTERNAL or
 * UNAVAILABLE), the sandbox service's constant false/null, and concurrent overlapping creates.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { polyclipEngine } from "../../src/geo/overlap.js";
import { cellAt, digitisedTwice, patch, prng, ring } from "../support/geometry-fixtures.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { grpc, LedgerGrpc, PRODUCTION_ID, SANDBOX_ID, type ServiceName, ts } from "./grpc-support.js";

type Json = Record<string, any>;

import type { SourceGeometry as Geometry, PolygonCoordinates as Rings } from "../../src/geo/types.js";

const PROD: ServiceName = "SourceLedgerService";
const SANDBOX: ServiceName = "SandboxSourceLedgerService";

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

/** GeoJSON-like coordinates to the typed proto geometry (packed lon,lat rings). */
function toProto(geometry: Geometry): object {
  const polygon = (rings: Rings) => ({ rings: rings.map((r) => ({ coordinates: r.flat() })) });
  return geometry.type === "Polygon"
    ? { polygon: polygon(geometry.coordinates) }
    : { multi_polygon: { polygons: geometry.coordinates.map(polygon) } };
}

/** `count` digitised-twice neighbour pairs in a fresh patch that polyclip-ts (the first overlay engine) throws on. */
function pairsDefeatingPolyclip(count: number): [Geometry, Geometry][] {
  const [x, y] = patch();
  const random = prng(4096);
  const found: [Geometry, Geometry][] = [];
  for (let n = 0; n < 2000 && found.length < count; n++) {
    const pair = digitisedTwice(x + (n % 40) * 0.01, y + Math.floor(n / 40) * 0.01, 0.001, random);
    try {
      polyclipEngine.intersection([pair[0].coordinates as Rings], [pair[1].coordinates as Rings]);
    } catch {
      found.push(pair);
    }
  }
  expect(found, "the fixture really reaches the fallback").toHaveLength(count);
  return found;
}

let counter = 0;
function alt(prefix = "src"): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}
function account(prefix = "acct-grpc-conflict"): string {
  counter += 1;
  return `${prefix}-${counter}`;
}

const START = "2024-01-01T00:00:00Z";
const END = "2025-01-01T00:00:00Z";

interface Extra {
  start?: string;
  end?: string;
  attributeType?: string[];
}

function input(geometry: Geometry, { start = START, end = END, attributeType = [] }: Extra = {}): Json {
  return {
    alt_id: alt(),
    geometry: toProto(geometry),
    start_at: ts(start),
    end_at: ts(end),
    attribute_type: attributeType.map((name) => `ATTRIBUTE_TYPE_${name}`),
  };
}

// --- calls ---

async function create(token: string, sources: Json[], service: ServiceName = PROD): Promise<Json[]> {
  const outcome = await client.call<{ sources: Json[] }>(service, "CreateSources", { sources }, token);
  expect(outcome.code, outcome.details).toBe(grpc.status.OK);
  return outcome.response!.sources;
}

async function createOne(
  token: string,
  geometry: Geometry,
  extra: Extra = {},
  service: ServiceName = PROD,
): Promise<Json> {
  const [record] = await create(token, [input(geometry, extra)], service);
  return record;
}

async function flag(token: string, id: string, service: ServiceName = PROD): Promise<boolean> {
  const outcome = await client.call<{ source: Json }>(service, "GetSource", { id }, token);
  expect(outcome.code, outcome.details).toBe(grpc.status.OK);
  return outcome.response!.source.conflict;
}

async function remove(token: string, key: { id: string } | { alt_id: string }): Promise<void> {
  const outcome = await client.call(PROD, "DeleteSource", key, token);
  expect(outcome.code, outcome.details).toBe(grpc.status.OK);
}

async function twoAccounts(): Promise<[string, string]> {
  return [await server.userToken(account()), await server.userToken(account())];
}

/** Creates `first` in one account and `second` in another; returns both flags after the second create. */
async function pair(
  first: Geometry,
  second: Geometry,
  extraFirst: Extra = {},
  extraSecond: Extra = {},
): Promise<[boolean, boolean]> {
  const [tokenA, tokenB] = await twoAccounts();
  const a = await createOne(tokenA, first, extraFirst);
  expect(a.conflict).toBe(false);
  const b = await createOne(tokenB, second, extraSecond);
  const aNow = await flag(tokenA, a.id);
  expect(aNow).toBe(b.conflict);
  return [aNow, b.conflict];
}

describe("conflicts across accounts over gRPC", () => {
  it("B overlapping A in another account: flagged in B's CreateSources response and in GetSource of A; A's owner cannot see B", async () => {
    const [tokenA, tokenB] = await twoAccounts();
    const origin = patch();
    const a = await createOne(tokenA, cellAt(origin, 0, 0, 10, 10));
    expect(a.id).toMatch(PRODUCTION_ID);
    expect(a.conflict).toBe(false);
    expect(a.unep_overlap).toBeNull();
    const b = await createOne(tokenB, cellAt(origin, 5, 0, 15, 10));
    expect(b.conflict).toBe(true);
    expect(await flag(tokenA, a.id)).toBe(true);

    const hidden = await client.call(PROD, "GetSource", { id: b.id }, tokenA);
    expect(hidden.code).toBe(grpc.status.NOT_FOUND);
    const listed = await client.ok<{ sources: Json[] }>(PROD, "ListSources", {}, tokenA);
    expect(listed.sources.map((s) => s.id)).toEqual([a.id]);
    expect(JSON.stringify(listed.sources)).not.toContain(b.id);
  });

  it("deleting B re-evaluates A", async () => {
    const [tokenA, tokenB] = await twoAccounts();
    const origin = patch();
    const a = await createOne(tokenA, cellAt(origin, 0, 0, 10, 10));
    const b = await createOne(tokenB, cellAt(origin, 2, 2, 8, 8));
    expect(b.conflict).toBe(true);
    await remove(tokenB, { id: b.id });
    expect(await flag(tokenA, a.id)).toBe(false);
  });

  it("A overlapping B and C stays flagged after B is deleted by alt_id, and clears after C", async () => {
    const [tokenA, tokenB] = await twoAccounts();
    const origin = patch();
    const a = await createOne(tokenA, cellAt(origin, 0, 0, 20, 10));
    const b = await createOne(tokenB, cellAt(origin, -5, 0, 5, 10));
    const c = await createOne(tokenB, cellAt(origin, 15, 0, 25, 10));
    await remove(tokenB, { alt_id: b.alt_id });
    expect(await flag(tokenA, a.id)).toBe(true);
    expect(await flag(tokenB, c.id)).toBe(true);
    await remove(tokenB, { id: c.id });
    expect(await flag(tokenA, a.id)).toBe(false);
  });
});

describe("hand-built cases over gRPC", () => {
  it("50% overlap → true", async () => {
    const origin = patch();
    expect(await pair(cellAt(origin, 0, 0, 10, 10), cellAt(origin, 0, 5, 10, 15))).toEqual([true, true]);
  });

  it("touching edges and corners → false", async () => {
    const origin = patch();
    expect(await pair(cellAt(origin, 0, 0, 10, 10), cellAt(origin, 10, 0, 20, 10))).toEqual([false, false]);
    expect(await pair(cellAt(origin, 0, 20, 10, 30), cellAt(origin, 10, 30, 20, 40))).toEqual([false, false]);
  });

  it("neighbours whose twice-digitised shared boundary defeats the first overlay engine → false, never INTERNAL", async () => {
    for (const [west, east] of pairsDefeatingPolyclip(4)) {
      expect(await pair(west, east)).toEqual([false, false]);
    }
  });

  it("0.5% sliver → false", async () => {
    const origin = patch();
    expect(await pair(cellAt(origin, 0, 0, 10, 10), cellAt(origin, 9.95, 0, 19.95, 10))).toEqual([false, false]);
  });

  it("1% boundary: just above → true, just below → false", async () => {
    const origin = patch();
    const above = 0.1 * (1 + 1e-6);
    const below = 0.1 * (1 - 1e-6);
    expect(await pair(cellAt(origin, 0, 0, 10, 10), cellAt(origin, 10 - above, 0, 20 - above, 10))).toEqual([
      true,
      true,
    ]);
    expect(await pair(cellAt(origin, 0, 20, 10, 30), cellAt(origin, 10 - below, 20, 20 - below, 30))).toEqual([
      false,
      false,
    ]);
  });

  it("contained → true", async () => {
    const origin = patch();
    expect(await pair(cellAt(origin, 0, 0, 100, 100), cellAt(origin, 40, 40, 41, 41))).toEqual([true, true]);
  });

  it("disjoint periods (end == other's start) → false; overlapping by 1 ms → true", async () => {
    const origin = patch();
    const g = cellAt(origin, 0, 0, 10, 10);
    expect(await pair(g, g, {}, { start: "2025-01-01T00:00:00Z", end: "2026-01-01T00:00:00Z" })).toEqual([
      false,
      false,
    ]);
    const h = cellAt(origin, 20, 0, 30, 10);
    expect(await pair(h, h, {}, { start: "2024-12-31T23:59:59.999Z", end: "2026-01-01T00:00:00Z" })).toEqual([
      true,
      true,
    ]);
  });

  it("disjoint attribute types → false; shared → true; missing on either side → true", async () => {
    const origin = patch();
    const g = (k: number) => cellAt(origin, 20 * k, 0, 20 * k + 10, 10);
    expect(await pair(g(0), g(0), { attributeType: ["CARBON_REMOVAL"] }, { attributeType: ["BIODIVERSITY"] })).toEqual([
      false,
      false,
    ]);
    expect(
      await pair(g(1), g(1), { attributeType: ["CARBON_REMOVAL", "CI_SCORE"] }, { attributeType: ["CI_SCORE"] }),
    ).toEqual([true, true]);
    expect(await pair(g(2), g(2), { attributeType: ["CARBON_REMOVAL"] }, {})).toEqual([true, true]);
    expect(await pair(g(3), g(3), {}, { attributeType: ["WATER_QUANTITY"] })).toEqual([true, true]);
  });

  it("MultiPolygon partly overlapping → true; between its parts → false", async () => {
    const [x, y] = patch();
    const u = 0.01;
    const parts: Geometry = {
      type: "MultiPolygon",
      coordinates: [[ring(x, y, x + 10 * u, y + 10 * u)], [ring(x + 50 * u, y, x + 60 * u, y + 10 * u)]],
    };
    expect(await pair(parts, { type: "Polygon", coordinates: [ring(x + 55 * u, y, x + 70 * u, y + 10 * u)] })).toEqual([
      true,
      true,
    ]);
    const y2 = y + 50 * u;
    const parts2: Geometry = {
      type: "MultiPolygon",
      coordinates: [[ring(x, y2, x + 10 * u, y2 + 10 * u)], [ring(x + 50 * u, y2, x + 60 * u, y2 + 10 * u)]],
    };
    expect(
      await pair(parts2, { type: "Polygon", coordinates: [ring(x + 20 * u, y2, x + 40 * u, y2 + 10 * u)] }),
    ).toEqual([false, false]);
  });

  it("a polygon inside another's hole → false; one reaching into the frame → true", async () => {
    const [x, y] = patch();
    const u = 0.01;
    const framed = (oy: number): Geometry => ({
      type: "Polygon",
      coordinates: [
        ring(x, oy, x + 10 * u, oy + 10 * u),
        [...ring(x + 2 * u, oy + 2 * u, x + 8 * u, oy + 8 * u)].reverse(),
      ],
    });
    expect(
      await pair(framed(y), { type: "Polygon", coordinates: [ring(x + 3 * u, y + 3 * u, x + 7 * u, y + 7 * u)] }),
    ).toEqual([false, false]);
    expect(
      await pair(framed(y + 20 * u), {
        type: "Polygon",
        coordinates: [ring(x + 1 * u, y + 24 * u, x + 3 * u, y + 25 * u)],
      }),
    ).toEqual([true, true]);
  });

  it("polygons at the antimeridian → true when overlapping", async () => {
    expect(
      await pair(
        { type: "Polygon", coordinates: [ring(179.9, -26.1, 180, -26)] },
        { type: "Polygon", coordinates: [ring(179.95, -26.05, 180, -25.9)] },
      ),
    ).toEqual([true, true]);
  });

  it("members of one CreateSources call flag each other in the response", async () => {
    const token = await server.userToken(account());
    const origin = patch();
    const records = await create(token, [
      input(cellAt(origin, 0, 0, 10, 10)),
      input(cellAt(origin, 50, 50, 60, 60)),
      input(cellAt(origin, 5, 5, 15, 15)),
    ]);
    expect(records.map((r) => r.conflict)).toEqual([true, false, true]);
  });
});

describe("SandboxSourceLedgerService", () => {
  it("is always false/null for the same data", async () => {
    const [tokenA, tokenB] = await twoAccounts();
    const origin = patch();
    const a = await createOne(tokenA, cellAt(origin, 0, 0, 10, 10), {}, SANDBOX);
    const b = await createOne(tokenB, cellAt(origin, 5, 0, 15, 10), {}, SANDBOX);
    const batch = await create(
      tokenA,
      [input(cellAt(origin, 0, 0, 10, 10)), input(cellAt(origin, 2, 2, 8, 8))],
      SANDBOX,
    );
    for (const record of [a, b, ...batch]) {
      expect(record.id).toMatch(SANDBOX_ID);
      expect(record.conflict).toBe(false);
      expect(record.unep_overlap).toBeNull();
    }
    expect(await flag(tokenA, a.id, SANDBOX)).toBe(false);
    expect(await flag(tokenB, b.id, SANDBOX)).toBe(false);
  });
});

describe("concurrency over gRPC", () => {
  it("10 overlapping CreateSources at once from 10 accounts: every source ends flagged", async () => {
    const origin = patch();
    const tokens = await Promise.all(Array.from({ length: 10 }, () => server.userToken(account("acct-grpc-race"))));
    const outcomes = await Promise.all(
      tokens.map((token, k) =>
        client.call<{ sources: Json[] }>(
          PROD,
          "CreateSources",
          { sources: [input(cellAt(origin, k, k, 10 + k, 10 + k))] },
          token,
        ),
      ),
    );
    for (const outcome of outcomes) expect(outcome.code, outcome.details).toBe(grpc.status.OK);
    const records = outcomes.map((o) => o.response!.sources[0]);
    expect(records.filter((r) => r.conflict === false).length).toBeLessThanOrEqual(1);
    for (const [k, record] of records.entries()) expect(await flag(tokens[k], record.id)).toBe(true);
  });
});
