/**
 * Time travel (`as_of`, docs/api.md §14) through the real server over REST, gRPC (grpc-js with
 * proto-loader) and Connect JSON: a scenario of creates, conflicts within one account and across
 * two, deletes (by id and by alt_id) and an alt_id reused after its delete, each step at a known
 * millisecond (the server's created_at, and the `at` of the history's `deleted` events). At every
 * instant just before and at each event, lists and gets answer the ledger as it stood then,
 * checked against a model: sources created by then and not deleted by then, in list order, each
 * as created with its `conflict` flag as it was then; filters, bbox, search and keyset paging at an
 * instant (Link / next_page_token, stable while the ledger changes); page tokens bound to the
 * instant; an instant not in the past reads the current ledger; malformed instants; the sandbox's
 * refusal; account scoping (users, admins, admins naming an account); a listing longer than the
 * store's read chunk.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { fieldViolations, grpc, LedgerGrpc, type ServiceName, ts } from "./grpc-support.js";
import { nextLink, rpc, rpcOk, tokenOf } from "./paging-support.js";
import { expectJson, expectProblem, expectViolation } from "./rest-support.js";

type Json = Record<string, any>;

let server: TestServer;
let client: LedgerGrpc;
let userA: string;
let userB: string;
let userC: string;
let userD: string;
let admin: string;

const ACCOUNT_A = "asof-acct-a";
const ACCOUNT_B = "asof-acct-b";
const ACCOUNT_C = "asof-acct-c";
const ACCOUNT_D = "asof-acct-d";
const SANDBOX_REFUSAL = "as_of exists only in production: the sandbox lets go of deleted sources' records";
const PROD: ServiceName = "SourceLedgerService";
const SANDBOX: ServiceName = "SandboxSourceLedgerService";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const iso = (ms: number) => new Date(ms).toISOString();
/** Between steps: the next event's millisecond is at least 2 later, so `at - 1` lies strictly between. */
const pause = () => sleep(6);

// ---- geometry: units of 0.01° from (10°, 10°) ---------------------------------------------------------

const ORIGIN_LON = 10;
const ORIGIN_LAT = 10;
function cell(x1: number, y1: number, x2: number, y2: number): Json {
  const lon = (x: number) => ORIGIN_LON + x * 0.01;
  const lat = (y: number) => ORIGIN_LAT + y * 0.01;
  return {
    type: "Polygon",
    coordinates: [
      [
        [lon(x1), lat(y1)],
        [lon(x2), lat(y1)],
        [lon(x2), lat(y2)],
        [lon(x1), lat(y2)],
        [lon(x1), lat(y1)],
      ],
    ],
  };
}
/** A bbox (minLon, minLat, maxLon, maxLat) in the same units. */
const bboxOf = (x1: number, y1: number, x2: number, y2: number): [number, number, number, number] => [
  ORIGIN_LON + x1 * 0.01,
  ORIGIN_LAT + y1 * 0.01,
  ORIGIN_LON + x2 * 0.01,
  ORIGIN_LAT + y2 * 0.01,
];

const Y2024 = { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" };
const Y2030 = { start_at: "2030-01-01T00:00:00Z", end_at: "2031-01-01T00:00:00Z" };

// ---- the scenario and its model --------------------------------------------------------------------

type Label = "a1" | "a2" | "b1" | "a3" | "a2b" | "b2" | "b3";
const LABELS: Label[] = ["a1", "a2", "b1", "a3", "a2b", "b2", "b3"];

interface Known {
  label: Label;
  id: string;
  account: string;
  createdAt: number;
  deletedAt?: number;
  /** The record in the create's REST answer. */
  rest: Json;
  /** The record as gRPC's GetSource answered right after the create (proto-loader form). */
  grpc: Json;
}

const known = {} as Record<Label, Known>;
/** The pairs that conflict while both sides live (overlap, shared period and attribute types). */
const PAIRS: [Label, Label][] = [
  ["a1", "b1"],
  ["a2", "a3"],
  ["a3", "a2b"],
];
/** Named instants of the scenario (epoch ms). */
const T = {} as Record<"a1" | "a2" | "b1" | "a3" | "delB1" | "delA2" | "a2b" | "b23" | "before" | "afterAll", number>;

function liveAt(label: Label, t: number): boolean {
  const k = known[label];
  return k.createdAt <= t && (k.deletedAt === undefined || k.deletedAt > t);
}
function flagAt(label: Label, t: number): boolean {
  return PAIRS.some(([x, y]) => (x === label || y === label) && liveAt(x, t) && liveAt(y, t));
}
/** The scenario's sources live at t in `account` (every account: null), in list order. */
function expectedAt(t: number, account: string | null): Label[] {
  return LABELS.filter((l) => liveAt(l, t) && (account === null || known[l].account === account)).sort((x, y) => {
    const a = known[x];
    const b = known[y];
    return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  });
}
const labelOf = (id: string): string => LABELS.find((l) => known[l].id === id) ?? id;
/** The REST record of `label` as it stood at t: as created, with the flag of then. */
const restAt = (label: Label, t: number) => ({ ...known[label].rest, conflict: flagAt(label, t) });
const grpcAt = (label: Label, t: number) => ({ ...known[label].grpc, conflict: flagAt(label, t) });

/** Every instant the checks probe: 1 ms before and at each event, and well before the first. */
function probes(): number[] {
  const events = LABELS.flatMap((l) => [known[l].createdAt, known[l].deletedAt ?? known[l].createdAt]);
  return [...new Set([T.before, ...events.flatMap((e) => [e - 1, e])])].sort((a, b) => a - b);
}

// ---- REST helpers -------------------------------------------------------------------------------------

async function restCreate(token: string, body: Json, env: "production" | "sandbox" = "production"): Promise<Json[]> {
  const res = await server.request("POST", env === "sandbox" ? "/sandbox/sources" : "/sources", { token, json: body });
  return expectJson<Json[]>(res, 201);
}

function flat(altId: string, geometry: Json, extra: Json = {}): Json {
  return { alt_id: altId, geometry, ...Y2024, ...extra };
}

/** GET `/sources?<params>`: status, body, Link. */
async function restList(
  token: string,
  params: Record<string, string | number | boolean | undefined>,
  base = "/sources",
): Promise<{ status: number; body: any; link: string | null; text: string }> {
  const query = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined) query.append(k, String(v));
  const res = await server.request("GET", `${base}?${query}`, { token });
  const link = res.headers.get("link") === null ? null : nextLink(res);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, link, text };
}

async function restListOk(token: string, params: Record<string, string | number | boolean | undefined>) {
  const answer = await restList(token, { limit: 1000, ...params });
  expect(answer.status, answer.text).toBe(200);
  return answer.body as Json[];
}

async function restGet(token: string, id: string, asOf?: string) {
  const query = asOf === undefined ? "" : `?as_of=${encodeURIComponent(asOf)}`;
  const res = await server.request("GET", `/sources/${encodeURIComponent(id)}${query}`, { token });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, text };
}

async function restSearch(token: string, body: Json, path = "/sources/search") {
  const res = await server.request("POST", path, { token, json: body });
  const link = res.headers.get("link") === null ? null : nextLink(res);
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null, link, text };
}

/** Every page of a REST listing from `path`, following Link; the ids and the links. */
async function walkRestIds(token: string, path: string, between?: (page: number) => Promise<void>) {
  const ids: string[] = [];
  const links: string[] = [];
  let target: string | null = path;
  for (let page = 0; target !== null; page++) {
    expect(page, "too many pages").toBeLessThan(100);
    const res: Response = await server.request("GET", target, { token });
    const link = res.headers.get("link") === null ? null : nextLink(res);
    const body = await expectJson<Json[]>(res, 200);
    ids.push(...body.map((r) => r.id as string));
    if (link !== null) links.push(link);
    target = link;
    if (target !== null && between) await between(page);
  }
  return { ids, links };
}

async function deletedAtOf(token: string, id: string): Promise<number> {
  const res = await server.request("GET", `/sources/${id}/history`, { token });
  const events = await expectJson<Json[]>(res, 200);
  const deleted = events.find((e) => e.type === "deleted");
  expect(deleted, `a deleted event for ${id}`).toBeTruthy();
  return Date.parse(deleted!.at);
}

// ---- gRPC helpers -------------------------------------------------------------------------------------

async function grpcList(token: string, request: Json, service: ServiceName = PROD) {
  return rpcOk<{ sources: Json[]; next_page_token: string }>(client, service, "ListSources", request, token);
}

// ---- setup ---------------------------------------------------------------------------------------------

beforeAll(async () => {
  server = await startTestServer();
  client = new LedgerGrpc(server.port);
  userA = await server.userToken(ACCOUNT_A);
  userB = await server.userToken(ACCOUNT_B);
  userC = await server.userToken(ACCOUNT_C);
  userD = await server.userToken(ACCOUNT_D);
  admin = await server.adminToken();

  const remember = async (label: Label, account: string, record: Json, token: string) => {
    const grpcRecord = await rpcOk(client, PROD, "GetSource", { id: record.id }, token);
    known[label] = {
      label,
      id: record.id,
      account,
      createdAt: Date.parse(record.created_at),
      rest: record,
      grpc: grpcRecord.source,
    };
    return known[label].createdAt;
  };
  const createOne = async (label: Label, token: string, account: string, body: Json) => {
    const [record] = await restCreate(token, body);
    return remember(label, account, record, token);
  };

  T.before = Date.now() - 60_000;
  await pause();
  // a1 (A, carbon) alone; a2 (A, biodiversity) apart from it.
  T.a1 = await createOne(
    "a1",
    userA,
    ACCOUNT_A,
    flat("a1", cell(0, 0, 10, 10), { attribute_type: ["CARBON_REMOVAL"], methodology: "M-1" }),
  );
  await pause();
  T.a2 = await createOne(
    "a2",
    userA,
    ACCOUNT_A,
    flat("a2", cell(30, 0, 40, 10), { attribute_type: ["BIODIVERSITY"], methodology: "M-2" }),
  );
  await pause();
  // b1 (B, untyped) overlaps a1: a conflict across the two accounts.
  T.b1 = await createOne("b1", userB, ACCOUNT_B, flat("b1", cell(5, 5, 15, 15)));
  await pause();
  // a3 (A) overlaps a2: a conflict within A.
  T.a3 = await createOne(
    "a3",
    userA,
    ACCOUNT_A,
    flat("a3", cell(35, 0, 45, 10), { attribute_type: ["BIODIVERSITY"], methodology: "M-2" }),
  );
  await pause();
  // B deletes b1 by id: a1 is cleared.
  expect((await server.request("DELETE", `/sources/${known.b1.id}`, { token: userB })).status).toBe(204);
  T.delB1 = known.b1.deletedAt = await deletedAtOf(userB, known.b1.id);
  await pause();
  // A deletes a2 by alt_id: a3 is cleared.
  expect((await server.request("DELETE", "/sources?alt_id=a2", { token: userA })).status).toBe(204);
  T.delA2 = known.a2.deletedAt = await deletedAtOf(userA, known.a2.id);
  await pause();
  // a2b reuses the alt_id "a2" and overlaps a3 (not a1): a3 is flagged again.
  T.a2b = await createOne("a2b", userA, ACCOUNT_A, flat("a2", cell(42, 0, 50, 10)));
  await pause();
  // b2 (active in 2030) and b3 in one request: the same created_at, ordered by id.
  const batch = await restCreate(userB, {
    type: "FeatureCollection",
    features: [
      { type: "Feature", id: "b2", geometry: cell(60, 0, 70, 10), properties: { ...Y2030, methodology: "M-B" } },
      { type: "Feature", id: "b3", geometry: cell(80, 0, 90, 10), properties: { ...Y2024, methodology: "M-B" } },
    ],
  });
  T.b23 = await remember("b2", ACCOUNT_B, batch[0], userB);
  await remember("b3", ACCOUNT_B, batch[1], userB);
  await pause();
  T.afterAll = Date.now();

  // The scenario as the model has it (the test's premises).
  const order = [T.a1, T.a2, T.b1, T.a3, T.delB1, T.delA2, T.a2b, T.b23];
  for (let i = 1; i < order.length; i++)
    expect(order[i] - order[i - 1], `step ${i} is 2 ms later`).toBeGreaterThanOrEqual(2);
  expect(known.b2.createdAt).toBe(known.b3.createdAt);
  expect(known.a1.rest.conflict).toBe(false);
  expect(known.b1.rest.conflict).toBe(true);
  expect(known.a3.rest.conflict).toBe(true);
  expect(known.a2b.rest.conflict).toBe(true);
  // The current flags: a1 cleared by b1's delete, a3 flagged again by a2b.
  expect((await restGet(userA, known.a1.id)).body.conflict).toBe(false);
  expect((await restGet(userA, known.a3.id)).body.conflict).toBe(true);
}, 30_000);

afterAll(async () => {
  client?.close();
  await server?.close();
});

// ---- REST ------------------------------------------------------------------------------------------------

describe("REST GET /sources?as_of", () => {
  it("at every instant just before and at each event: the live sources then, in list order, each as created with its flag then", async () => {
    const scopes: [string, string, Record<string, string>, string | null][] = [
      ["user A", userA, {}, ACCOUNT_A],
      ["user B", userB, {}, ACCOUNT_B],
      ["admin", admin, {}, null],
      ["admin naming A", admin, { account_id: ACCOUNT_A }, ACCOUNT_A],
      ["admin naming B", admin, { account_id: ACCOUNT_B }, ACCOUNT_B],
    ];
    for (const t of probes()) {
      for (const [name, token, params, account] of scopes) {
        const body = await restListOk(token, { ...params, as_of: iso(t) });
        const expected = expectedAt(t, account);
        expect(
          body.map((r) => labelOf(r.id)),
          `${name} at ${iso(t)}`,
        ).toEqual(expected);
        expect(body, `${name} at ${iso(t)}`).toEqual(expected.map((l) => restAt(l, t)));
      }
    }
    // Spot checks of the model itself: the flags as they were.
    expect(flagAt("a1", T.b1)).toBe(true);
    expect(flagAt("a1", T.delB1)).toBe(false);
    expect(flagAt("a3", T.delA2)).toBe(false);
    expect(flagAt("a3", T.a2b)).toBe(true);
    expect(expectedAt(T.delB1 - 1, ACCOUNT_B)).toEqual(["b1"]);
  });

  it("the instant is read to the millisecond: an offset names the same instant, a fraction of the millisecond before a create is still before it", async () => {
    const t = T.a3;
    const atA3 = await restListOk(admin, { as_of: iso(t) });
    expect(atA3.map((r) => labelOf(r.id))).toEqual(["a1", "a2", "b1", "a3"]);
    // The same instant at +05:30.
    const shifted = new Date(t + 5.5 * 3600_000).toISOString().replace("Z", "+05:30");
    expect(await restListOk(admin, { as_of: shifted })).toEqual(atA3);
    // 0.999999 ms before a3's create: not yet there.
    const justBefore = `${iso(t - 1).slice(0, -1)}999999Z`;
    const before = await restListOk(admin, { as_of: justBefore });
    expect(before.map((r) => labelOf(r.id))).toEqual(["a1", "a2", "b1"]);
    expect(before.find((r) => r.id === known.a2.id)?.conflict).toBe(false);
    // Lower-case t and z (RFC 3339 allows them).
    expect(await restListOk(admin, { as_of: iso(t).replace("T", "t").replace("Z", "z") })).toEqual(atA3);
    // An instant before the epoch and the first instant a Timestamp holds: nothing yet.
    expect(await restListOk(admin, { as_of: "1969-12-31T23:59:59Z" })).toEqual([]);
    expect(await restListOk(admin, { as_of: "0001-01-01T00:00:00Z" })).toEqual([]);
  });

  it("GET /sources/{id}?as_of: found exactly while live then (since-deleted included), as created with its flag then; 404 otherwise", async () => {
    for (const t of probes()) {
      for (const label of LABELS) {
        const { id, account } = known[label];
        const owner = account === ACCOUNT_A ? userA : userB;
        const other = account === ACCOUNT_A ? userB : userA;
        const what = `${label} at ${iso(t)}`;
        for (const token of [owner, admin]) {
          const answer = await restGet(token, id, iso(t));
          if (liveAt(label, t)) {
            expect(answer.status, `${what}: ${answer.text}`).toBe(200);
            expect(answer.body, what).toEqual(restAt(label, t));
          } else {
            expect(answer.status, `${what}: ${answer.text}`).toBe(404);
            expect(answer.body.code).toBe("not_found");
          }
        }
        // Another account never finds it, at any instant, as if it never existed.
        const foreign = await restGet(other, id, iso(t));
        expect(foreign.status, `${what} for another account`).toBe(404);
        expect(foreign.text).not.toContain(account);
      }
    }
    // Since-deleted sources: gone now, found in the past with the flag they had.
    expect((await restGet(userB, known.b1.id)).status).toBe(404);
    expect((await restGet(userB, known.b1.id, iso(T.delB1 - 1))).body).toEqual(restAt("b1", T.delB1 - 1));
    expect(restAt("b1", T.delB1 - 1).conflict).toBe(true);
    // An unknown id: 404 at any instant, as without as_of.
    const unknown = "src_01ARZ3NDEKTSV4RRFFQ69G5FAV";
    expect((await restGet(userA, unknown, iso(T.b23))).status).toBe(404);
  });

  it("filters at an instant: conflict, alt_id (reused after a delete), active_at, attribute_type, methodology, bbox", async () => {
    const cases: [string, number, Record<string, string>, Label[]][] = [
      ["conflict=true once b1 is there", T.b1, { conflict: "true" }, ["a1", "b1"]],
      ["conflict=false once b1 is there", T.b1, { conflict: "false" }, ["a2"]],
      ["conflict=true after a3", T.a3, { conflict: "true" }, ["a1", "a2", "b1", "a3"]],
      ["conflict=true after b1's delete", T.delB1, { conflict: "true" }, ["a2", "a3"]],
      ["conflict=true after a2's delete", T.delA2, { conflict: "true" }, []],
      ["conflict=false after a2's delete", T.delA2, { conflict: "false" }, ["a1", "a3"]],
      ["conflict=true after a2b", T.b23, { conflict: "true" }, ["a3", "a2b"]],
      ["alt_id a2 before its delete", T.delA2 - 1, { alt_id: "a2" }, ["a2"]],
      ["alt_id a2 between delete and reuse", T.delA2, { alt_id: "a2" }, []],
      ["alt_id a2 once reused", T.a2b, { alt_id: "a2" }, ["a2b"]],
      ["alt_id b1 before its delete (admin)", T.delB1 - 1, { alt_id: "b1" }, ["b1"]],
      ["active_at 2030", T.b23, { active_at: "2030-06-01T00:00:00Z" }, ["b2"]],
      ["active_at 2024", T.b23, { active_at: "2024-06-01T00:00:00Z" }, ["a1", "a3", "a2b", "b3"]],
      ["attribute_type BIODIVERSITY", T.a3, { attribute_type: "BIODIVERSITY" }, ["a2", "a3"]],
      ["methodology M-2 with conflict=true", T.delB1, { methodology: "M-2", conflict: "true" }, ["a2", "a3"]],
      ["bbox over b1's far corner", T.b1, { bbox: bboxOf(12, 12, 14, 14).join(",") }, ["b1"]],
      ["bbox over b1's far corner after its delete", T.delB1, { bbox: bboxOf(12, 12, 14, 14).join(",") }, []],
      ["bbox touching a1 and b1", T.a3, { bbox: bboxOf(10, 10, 12, 12).join(",") }, ["a1", "b1"]],
      ["bbox over a2, a3 and a2b's cell", T.delA2 - 1, { bbox: bboxOf(31, 1, 49, 9).join(",") }, ["a2", "a3"]],
      ["bbox over a2, a3 and a2b's cell, later", T.a2b, { bbox: bboxOf(31, 1, 49, 9).join(",") }, ["a3", "a2b"]],
    ];
    for (const [name, t, params, expected] of cases) {
      const body = await restListOk(admin, { ...params, as_of: iso(t) });
      expect(
        body.map((r) => labelOf(r.id)),
        name,
      ).toEqual(expected);
      expect(body, name).toEqual(expected.map((l) => restAt(l, t)));
    }
    // The same filters for a user see only the user's own.
    const mine = await restListOk(userA, { alt_id: "b1", as_of: iso(T.delB1 - 1) });
    expect(mine).toEqual([]);
    const conflicting = await restListOk(userB, { conflict: "true", as_of: iso(T.a3) });
    expect(conflicting.map((r) => labelOf(r.id))).toEqual(["b1"]);
  });

  it("POST /sources/search with as_of in the body: the area and the filters at that instant", async () => {
    const area = cell(11, 11, 14, 14); // inside b1 only
    const cases: [string, string, number, Json, Label[]][] = [
      ["b1's area, before b1", admin, T.b1 - 1, {}, []],
      ["b1's area, at b1", admin, T.b1, {}, ["b1"]],
      ["b1's area, just before its delete, by B", userB, T.delB1 - 1, {}, ["b1"]],
      ["b1's area, at its delete", admin, T.delB1, {}, []],
      ["b1's area, by A (never another account's)", userA, T.b1, {}, []],
    ];
    for (const [name, token, t, extra, expected] of cases) {
      const answer = await restSearch(token, { intersects: area, as_of: iso(t), ...extra });
      expect(answer.status, `${name}: ${answer.text}`).toBe(200);
      expect(answer.body, name).toEqual(expected.map((l) => restAt(l, t)));
    }
    // An area over a1 and b1's overlap with conflict=true: both while the pair lives, none after.
    const overlap = cell(6, 6, 9, 9);
    const during = await restSearch(admin, { intersects: overlap, conflict: true, as_of: iso(T.a3) });
    expect(during.body.map((r: Json) => labelOf(r.id))).toEqual(["a1", "b1"]);
    const after = await restSearch(admin, { intersects: overlap, conflict: true, as_of: iso(T.delB1) });
    expect(after.body).toEqual([]);
    const afterUnflagged = await restSearch(admin, { intersects: overlap, conflict: false, as_of: iso(T.delB1) });
    expect(afterUnflagged.body).toEqual([restAt("a1", T.delB1)]);
    // A point on a2's and a3's overlap, with alt_id a2: a2, nothing, then a2b (which does not cover it).
    const point = { type: "Point", coordinates: [ORIGIN_LON + 0.37, ORIGIN_LAT + 0.05] };
    const a2At = async (t: number) =>
      (await restSearch(userA, { intersects: point, alt_id: "a2", as_of: iso(t) })).body.map((r: Json) =>
        labelOf(r.id),
      );
    expect(await a2At(T.a3)).toEqual(["a2"]);
    expect(await a2At(T.delA2)).toEqual([]);
    expect(await a2At(T.b23)).toEqual([]);
    // as_of null counts as absent: the current ledger.
    const nullAsOf = await restSearch(admin, { intersects: area, as_of: null });
    expect(nullAsOf.status).toBe(200);
    expect(nullAsOf.body).toEqual([]);
  });

  it("keyset paging at an instant: Link keeps as_of, the pages make the whole listing", async () => {
    for (const t of [T.a3, T.delA2, T.b23]) {
      const path = `/sources?limit=1&as_of=${encodeURIComponent(iso(t))}`;
      const walk = await walkRestIds(admin, path);
      expect(walk.ids.map(labelOf), iso(t)).toEqual(expectedAt(t, null));
      expect(walk.links).toHaveLength(expectedAt(t, null).length - 1);
      for (const link of walk.links) {
        const url = new URL(link, "http://x");
        expect(url.pathname).toBe("/sources");
        expect(url.searchParams.get("as_of")).toBe(iso(t));
      }
    }
    // A search's Link: the same body posted to it.
    const body = { intersects: cell(-100, -100, 200, 200), as_of: iso(T.a3), limit: 2 };
    const first = await restSearch(admin, body);
    expect(first.status, first.text).toBe(200);
    expect(first.link).not.toBeNull();
    const second = await restSearch(admin, body, first.link!);
    expect(second.status, second.text).toBe(200);
    expect([...first.body, ...second.body].map((r: Json) => labelOf(r.id))).toEqual(["a1", "a2", "b1", "a3"]);
    expect(second.link).toBeNull();
    // offset still works with as_of (kept for compatibility).
    const offset = await restListOk(admin, { as_of: iso(T.a3), offset: 2 });
    expect(offset.map((r) => labelOf(r.id))).toEqual(["b1", "a3"]);
  });

  it("a walk at a past instant is stable while the ledger changes under it: deletes, creates and a reused alt_id do not show", async () => {
    const created = await restCreate(userC, {
      type: "FeatureCollection",
      features: [
        { type: "Feature", id: "c1", geometry: cell(0, 100, 10, 110), properties: Y2024 },
        { type: "Feature", id: "c2", geometry: cell(20, 100, 30, 110), properties: Y2024 },
      ],
    });
    await pause();
    const [c3] = await restCreate(userC, flat("c3", cell(25, 100, 35, 110))); // conflicts with c2
    await pause();
    const [c4] = await restCreate(userC, flat("c4", cell(50, 100, 60, 110)));
    const t = Date.parse(c4.created_at);
    await pause();
    const expected = [...created, c3, c4].sort((a, b) =>
      a.created_at === b.created_at ? (a.id < b.id ? -1 : 1) : Date.parse(a.created_at) - Date.parse(b.created_at),
    );
    const asThen = (r: Json) => ({ ...r, conflict: r.alt_id === "c2" || r.alt_id === "c3" });
    let changes = 0;
    const walk = await walkRestIds(userC, `/sources?limit=1&as_of=${encodeURIComponent(iso(t))}`, async (page) => {
      if (page === 0) {
        // Delete c3 (clears c2) and c1, create c5 and a new c1.
        expect((await server.request("DELETE", `/sources/${c3.id}`, { token: userC })).status).toBe(204);
        expect((await server.request("DELETE", "/sources?alt_id=c1", { token: userC })).status).toBe(204);
        await restCreate(userC, flat("c5", cell(70, 100, 80, 110)));
        await restCreate(userC, flat("c1", cell(90, 100, 99, 110)));
        changes += 4;
      }
    });
    expect(changes).toBe(4);
    expect(walk.ids).toEqual(expected.map((r) => r.id));
    // Read again whole: the same records as then, flags included.
    expect(await restListOk(userC, { as_of: iso(t) })).toEqual(expected.map(asThen));
    // The current ledger has moved on.
    const now = await restListOk(userC, {});
    expect(now.map((r) => r.alt_id)).toEqual(["c2", "c4", "c5", "c1"]);
    expect(now[0].conflict).toBe(false);
  });

  it("a page token is bound to the instant: refused without as_of, with another instant, and a plain token with as_of (422 /query/page_token)", async () => {
    const first = await restList(admin, { limit: 1, as_of: iso(T.a3) });
    expect(first.status, first.text).toBe(200);
    const token = tokenOf(first.link!);
    const refused = async (params: Record<string, string | number>) => {
      const res = await server.request("GET", `/sources?${new URLSearchParams(params as Record<string, string>)}`, {
        token: admin,
      });
      await expectViolation(res, "/query/page_token", "page_token does not belong to this listing");
    };
    await refused({ limit: 1, page_token: token });
    await refused({ limit: 1, page_token: token, as_of: iso(T.a3 + 1) });
    await refused({ limit: 1, page_token: token, as_of: iso(T.a2) });
    const plain = await restList(admin, { limit: 1 });
    expect(plain.link).not.toBeNull();
    await refused({ limit: 1, page_token: tokenOf(plain.link!), as_of: iso(T.a3) });
    await refused({ limit: 1, page_token: tokenOf(plain.link!), as_of: iso(T.b23) });
    // The same instant in another notation is the same listing; limit may change.
    const shifted = new Date(T.a3 - 2 * 3600_000).toISOString().replace("Z", "-02:00");
    const next = await restList(admin, { limit: 10, page_token: token, as_of: shifted });
    expect(next.status, next.text).toBe(200);
    expect(next.body.map((r: Json) => labelOf(r.id))).toEqual(["a2", "b1", "a3"]);
    // Another account's caller cannot use it either, at the same instant.
    const foreign = await server.request(
      "GET",
      `/sources?${new URLSearchParams({ limit: "1", page_token: token, as_of: iso(T.a3) })}`,
      { token: userA },
    );
    await expectViolation(foreign, "/query/page_token", "page_token does not belong to this listing");
    // A search token likewise: refused with the body's as_of removed or changed.
    const body = { intersects: cell(-100, -100, 200, 200), as_of: iso(T.a3), limit: 1 };
    const search = await restSearch(admin, body);
    expect(search.link).not.toBeNull();
    for (const changed of [
      { ...body, as_of: undefined },
      { ...body, as_of: iso(T.b1) },
    ]) {
      const res = await server.request("POST", search.link!, { token: admin, json: changed });
      await expectViolation(res, "/query/page_token", "page_token does not belong to this listing");
    }
  });

  it("an instant not in the past reads the current ledger (lists, gets, search); since-deleted sources are not in it", async () => {
    const future = iso(Date.now() + 3600_000);
    for (const [token, params] of [
      [admin, {}],
      [userA, {}],
      [userB, {}],
      [admin, { account_id: ACCOUNT_B }],
      [admin, { conflict: "true" }],
    ] as [string, Record<string, string>][]) {
      const current = await restListOk(token, params);
      for (const asOf of [future, "9999-12-31T23:59:59.999Z"]) {
        expect(await restListOk(token, { ...params, as_of: asOf })).toEqual(current);
      }
    }
    const current = await restListOk(admin, { account_id: ACCOUNT_A });
    expect(current.map((r) => r.id)).not.toContain(known.a2.id);
    expect(current.find((r) => r.id === known.a1.id)?.conflict).toBe(false);
    for (const label of LABELS) {
      const token = known[label].account === ACCOUNT_A ? userA : userB;
      const now = await restGet(token, known[label].id);
      const later = await restGet(token, known[label].id, future);
      expect(later.status, label).toBe(now.status);
      const { instance: _i1, ...nowBody } = now.body;
      const { instance: _i2, ...laterBody } = later.body;
      expect(laterBody, label).toEqual(nowBody);
    }
    const search = await restSearch(admin, { intersects: cell(6, 6, 9, 9), as_of: future });
    expect(search.body).toEqual((await restSearch(admin, { intersects: cell(6, 6, 9, 9) })).body);
  });

  it("a malformed as_of is a 422 at /query/as_of (list and get) or /as_of (search body)", async () => {
    const bad = [
      "2024-01-01",
      "yesterday",
      "2024-01-01T00:00:00",
      "2024-02-30T00:00:00Z",
      "2024-01-01T24:00:00Z",
      "2024-01-01T00:00:60Z",
      "1700000000",
      "",
      "2024-01-01T00:00:00+25:00",
    ];
    for (const value of bad) {
      const list = await server.request("GET", `/sources?as_of=${encodeURIComponent(value)}`, { token: userA });
      await expectViolation(list, "/query/as_of", "as_of must be an RFC 3339 date-time");
      const get = await server.request("GET", `/sources/${known.a1.id}?as_of=${encodeURIComponent(value)}`, {
        token: userA,
      });
      await expectViolation(get, "/query/as_of", "as_of must be an RFC 3339 date-time");
      const search = await server.request("POST", "/sources/search", {
        token: userA,
        json: { intersects: cell(0, 0, 1, 1), as_of: value },
      });
      await expectViolation(search, "/as_of", "as_of must be an RFC 3339 date-time");
    }
    // Not a string in the body; given twice in the query.
    const numeric = await server.request("POST", "/sources/search", {
      token: userA,
      json: { intersects: cell(0, 0, 1, 1), as_of: Date.now() },
    });
    await expectViolation(numeric, "/as_of", "as_of must be");
    const twice = await server.request("GET", `/sources?as_of=${iso(T.a1)}&as_of=${iso(T.a2)}`, { token: userA });
    await expectViolation(twice, "/query/as_of", "at most once");
    // With other problems: each at its own pointer.
    const both = await server.request("GET", "/sources?as_of=yesterday&limit=0", { token: userA });
    const problem = await expectProblem(both, 422, "invalid_argument");
    expect(problem.errors.map((e) => e.pointer).sort()).toEqual(["/query/as_of", "/query/limit"]);
  });

  it("the sandbox refuses as_of, past or future: 422 `as_of exists only in production: the sandbox lets go of deleted sources' records`", async () => {
    const [record] = await restCreate(userA, flat("sb-1", cell(0, 0, 10, 10)), "sandbox");
    for (const asOf of [iso(T.a1), iso(Date.now() + 3600_000)]) {
      const list = await server.request("GET", `/sandbox/sources?as_of=${encodeURIComponent(asOf)}`, { token: userA });
      await expectViolation(list, "/query/as_of", SANDBOX_REFUSAL);
      const get = await server.request("GET", `/sandbox/sources/${record.id}?as_of=${encodeURIComponent(asOf)}`, {
        token: userA,
      });
      await expectViolation(get, "/query/as_of", SANDBOX_REFUSAL);
      const search = await server.request("POST", "/sandbox/sources/search", {
        token: userA,
        json: { intersects: cell(0, 0, 10, 10), as_of: asOf },
      });
      await expectViolation(search, "/as_of", SANDBOX_REFUSAL);
    }
    // Malformed in the sandbox: still a 422 at /query/as_of.
    const malformed = await server.request("GET", "/sandbox/sources?as_of=yesterday", { token: userA });
    const problem = await expectProblem(malformed, 422, "invalid_argument");
    expect(problem.errors.map((e) => e.pointer)).toContain("/query/as_of");
    // And the sandbox itself answers without as_of.
    const plain = await server.request("GET", `/sandbox/sources/${record.id}`, { token: userA });
    expect(plain.status).toBe(200);
  });

  it("account scoping: a user naming another account is refused as without as_of; admins see every account or the one named", async () => {
    const without = await server.request("GET", `/sources?account_id=${ACCOUNT_B}`, { token: userA });
    const withAsOf = await server.request("GET", `/sources?account_id=${ACCOUNT_B}&as_of=${iso(T.b1)}`, {
      token: userA,
    });
    expect(withAsOf.status).toBe(without.status);
    const { instance: _i1, ...a } = await without.json();
    const { instance: _i2, ...b } = await withAsOf.json();
    expect(b).toEqual(a);
    // Admins naming an account that has nothing then: empty.
    expect(await restListOk(admin, { account_id: ACCOUNT_B, as_of: iso(T.a2) })).toEqual([]);
    expect(await restListOk(admin, { account_id: "asof-nobody", as_of: iso(T.b23) })).toEqual([]);
    // A user's own listing never holds another account's record at any instant.
    for (const t of probes()) {
      const body = await restListOk(userA, { as_of: iso(t) });
      expect(body.every((r) => r.account_id === ACCOUNT_A)).toBe(true);
      expect(JSON.stringify(body)).not.toContain(ACCOUNT_B);
    }
  });

  it("conflicts found within one request, then a third side and a delete: each flag as it was at each instant", async () => {
    const [e1, e2] = await restCreate(userC, {
      type: "FeatureCollection",
      features: [
        { type: "Feature", id: "e1", geometry: cell(0, 150, 10, 160), properties: Y2024 },
        { type: "Feature", id: "e2", geometry: cell(5, 150, 15, 160), properties: Y2024 },
      ],
    });
    expect([e1.conflict, e2.conflict]).toEqual([true, true]);
    const t0 = Date.parse(e1.created_at);
    await pause();
    const [e3] = await restCreate(userC, flat("e3", cell(-5, 150, 2, 160)));
    const t1 = Date.parse(e3.created_at);
    await pause();
    expect((await server.request("DELETE", `/sources/${e1.id}`, { token: userC })).status).toBe(204);
    const t2 = await deletedAtOf(userC, e1.id);
    await pause();
    const flags = async (t: number) =>
      Object.fromEntries(
        (await restListOk(userC, { bbox: bboxOf(-10, 145, 20, 165).join(","), as_of: iso(t) })).map((r) => [
          r.alt_id,
          r.conflict,
        ]),
      );
    expect(await flags(t0 - 1)).toEqual({});
    expect(await flags(t0)).toEqual({ e1: true, e2: true });
    expect(await flags(t1)).toEqual({ e1: true, e2: true, e3: true });
    expect(await flags(t2 - 1)).toEqual({ e1: true, e2: true, e3: true });
    // e1's delete leaves e2 and e3 without a pair (they do not overlap each other).
    expect(await flags(t2)).toEqual({ e2: false, e3: false });
    expect((await restGet(userC, e1.id, iso(t2 - 1))).body).toEqual({ ...e1, conflict: true });
    expect((await restGet(userC, e2.id, iso(t0))).body).toEqual(e2);
    expect((await restGet(userC, e2.id, iso(t2))).body).toEqual({ ...e2, conflict: false });
  });

  it("a listing longer than the store's read chunk (601 sources, filters that skip most): complete and in order", async () => {
    const features = Array.from({ length: 600 }, (_, i) => ({
      type: "Feature",
      id: `d-${String(i).padStart(3, "0")}`,
      geometry: cell(
        200 + (i % 30) * 5,
        200 + Math.floor(i / 30) * 5,
        202 + (i % 30) * 5,
        202 + Math.floor(i / 30) * 5,
      ),
      properties: Y2024,
    }));
    const batch = await restCreate(userD, { type: "FeatureCollection", features });
    await pause();
    const [last] = await restCreate(userD, flat("d-last", cell(400, 400, 402, 402), { methodology: "M-D" }));
    const t = Date.parse(last.created_at);
    await pause();
    // Deleted after t: still there at t.
    expect((await server.request("DELETE", `/sources/${batch[0].id}`, { token: userD })).status).toBe(204);
    expect((await server.request("DELETE", `/sources/${last.id}`, { token: userD })).status).toBe(204);

    const all = [...batch].sort((x, y) => (x.id < y.id ? -1 : 1)).concat([last]);
    const whole = await restListOk(userD, { as_of: iso(t) });
    expect(whole.map((r) => r.id)).toEqual(all.map((r) => r.id));
    expect(whole).toEqual(all);
    const walk = await walkRestIds(userD, `/sources?limit=250&as_of=${encodeURIComponent(iso(t))}`);
    expect(walk.ids).toEqual(all.map((r) => r.id));
    expect(walk.links).toHaveLength(2);
    // Filters that skip the first 600: the last one alone, for the user and for an admin.
    expect(await restListOk(userD, { alt_id: "d-last", as_of: iso(t) })).toEqual([last]);
    expect(await restListOk(userD, { methodology: "M-D", as_of: iso(t) })).toEqual([last]);
    expect(await restListOk(admin, { methodology: "M-D", as_of: iso(t) })).toEqual([last]);
    expect(await restListOk(admin, { alt_id: "d-last", account_id: ACCOUNT_D, as_of: iso(t) })).toEqual([last]);
    // Before the batch: none of D's.
    expect(await restListOk(userD, { as_of: iso(Date.parse(batch[0].created_at) - 1) })).toEqual([]);
  });
});

// ---- gRPC ---------------------------------------------------------------------------------------------------

describe("gRPC as_of (grpc-js, proto-loader)", () => {
  it("ListSources at every instant: the live sources then, each as GetSource answered after its create with the flag then", async () => {
    const scopes: [string, string, Json, string | null][] = [
      ["user A", userA, {}, ACCOUNT_A],
      ["user B", userB, {}, ACCOUNT_B],
      ["admin", admin, {}, null],
      ["admin naming B", admin, { account_id: ACCOUNT_B }, ACCOUNT_B],
    ];
    for (const t of probes()) {
      for (const [name, token, extra, account] of scopes) {
        const answer = await grpcList(token, { ...extra, as_of: ts(iso(t)), limit: 1000 });
        const expected = expectedAt(t, account);
        expect(
          answer.sources.map((s) => labelOf(s.id)),
          `${name} at ${iso(t)}`,
        ).toEqual(expected);
        expect(answer.sources, `${name} at ${iso(t)}`).toEqual(expected.map((l) => grpcAt(l, t)));
        expect(answer.next_page_token).toBe("");
      }
    }
    // A Timestamp's nanos below the next millisecond: still before a3.
    const justBefore = { seconds: String(Math.floor((T.a3 - 1) / 1000)), nanos: ((T.a3 - 1) % 1000) * 1e6 + 999_999 };
    const before = await grpcList(admin, { as_of: justBefore });
    expect(before.sources.map((s) => labelOf(s.id))).toEqual(["a1", "a2", "b1"]);
  });

  it("GetSource with as_of: found while live then, NOT_FOUND before and after; never for another account", async () => {
    for (const t of probes()) {
      for (const label of LABELS) {
        const { id, account } = known[label];
        const owner = account === ACCOUNT_A ? userA : userB;
        const other = account === ACCOUNT_A ? userB : userA;
        const what = `${label} at ${iso(t)}`;
        const outcome = await rpc(client, PROD, "GetSource", { id, as_of: ts(iso(t)) }, owner);
        if (liveAt(label, t)) {
          expect(outcome.code, `${what}: ${outcome.details}`).toBe(grpc.status.OK);
          expect(outcome.response.source, what).toEqual(grpcAt(label, t));
        } else {
          expect(outcome.code, `${what}: ${outcome.details}`).toBe(grpc.status.NOT_FOUND);
        }
        const byAdmin = await rpc(client, PROD, "GetSource", { id, as_of: ts(iso(t)) }, admin);
        expect(byAdmin.code, what).toBe(liveAt(label, t) ? grpc.status.OK : grpc.status.NOT_FOUND);
        const foreign = await rpc(client, PROD, "GetSource", { id, as_of: ts(iso(t)) }, other);
        expect(foreign.code, `${what} for another account`).toBe(grpc.status.NOT_FOUND);
        expect(foreign.details).not.toContain(account);
      }
    }
  });

  it("filters and SearchSources (query.as_of) at an instant", async () => {
    const list = async (t: number, filters: Json) =>
      (await grpcList(admin, { ...filters, as_of: ts(iso(t)) })).sources.map((s) => labelOf(s.id));
    expect(await list(T.a3, { conflict: true })).toEqual(["a1", "a2", "b1", "a3"]);
    expect(await list(T.delB1, { conflict: true })).toEqual(["a2", "a3"]);
    expect(await list(T.delA2, { conflict: false })).toEqual(["a1", "a3"]);
    expect(await list(T.delA2 - 1, { alt_id: "a2" })).toEqual(["a2"]);
    expect(await list(T.a2b, { alt_id: "a2" })).toEqual(["a2b"]);
    expect(await list(T.b23, { active_at: ts("2030-06-01T00:00:00Z") })).toEqual(["b2"]);
    const [minLon, minLat, maxLon, maxLat] = bboxOf(12, 12, 14, 14);
    const bbox = { min_lon: minLon, min_lat: minLat, max_lon: maxLon, max_lat: maxLat };
    expect(await list(T.b1, { bbox })).toEqual(["b1"]);
    expect(await list(T.delB1, { bbox })).toEqual([]);

    const search = async (token: string, t: number, query: Json = {}) =>
      (
        await rpcOk(client, PROD, "SearchSources", { box: bbox, query: { ...query, as_of: ts(iso(t)) } }, token)
      ).sources.map((s: Json) => labelOf(s.id));
    expect(await search(admin, T.b1 - 1)).toEqual([]);
    expect(await search(admin, T.b1)).toEqual(["b1"]);
    expect(await search(userB, T.delB1 - 1)).toEqual(["b1"]);
    expect(await search(userB, T.delB1)).toEqual([]);
    expect(await search(userA, T.b1)).toEqual([]);
    expect(await search(admin, T.a3, { conflict: false })).toEqual([]);
    const answer = await rpcOk(client, PROD, "SearchSources", { box: bbox, query: { as_of: ts(iso(T.a3)) } }, userB);
    expect(answer.sources).toEqual([grpcAt("b1", T.a3)]);
  });

  it("next_page_token walks an instant; a token is bound to it (INVALID_ARGUMENT at page_token / query.page_token)", async () => {
    for (const t of [T.a3, T.b23]) {
      const ids: string[] = [];
      let pageToken = "";
      do {
        const page = await grpcList(admin, { limit: 1, as_of: ts(iso(t)), page_token: pageToken });
        ids.push(...page.sources.map((s) => s.id));
        pageToken = page.next_page_token;
      } while (pageToken !== "");
      expect(ids.map(labelOf)).toEqual(expectedAt(t, null));
    }
    const first = await grpcList(admin, { limit: 1, as_of: ts(iso(T.a3)) });
    const plain = await grpcList(admin, { limit: 1 });
    const refusals: [Json, string][] = [
      [{ limit: 1, page_token: first.next_page_token }, "without as_of"],
      [{ limit: 1, page_token: first.next_page_token, as_of: ts(iso(T.a2)) }, "another instant"],
      [{ limit: 1, page_token: plain.next_page_token, as_of: ts(iso(T.a3)) }, "a plain token with as_of"],
    ];
    for (const [request, what] of refusals) {
      const outcome = await rpc(client, PROD, "ListSources", request, admin);
      expect(outcome.code, what).toBe(grpc.status.INVALID_ARGUMENT);
      expect(
        fieldViolations(outcome).map((v) => v.field),
        what,
      ).toEqual(["page_token"]);
    }
    const [minLon, minLat, maxLon, maxLat] = bboxOf(-100, -100, 200, 200);
    const box = { min_lon: minLon, min_lat: minLat, max_lon: maxLon, max_lat: maxLat };
    const search = await rpcOk(
      client,
      PROD,
      "SearchSources",
      { box, query: { limit: 1, as_of: ts(iso(T.a3)) } },
      admin,
    );
    expect(search.next_page_token).not.toBe("");
    const next = await rpcOk(
      client,
      PROD,
      "SearchSources",
      { box, query: { limit: 10, as_of: ts(iso(T.a3)), page_token: search.next_page_token } },
      admin,
    );
    expect(next.sources.map((s: Json) => labelOf(s.id))).toEqual(["a2", "b1", "a3"]);
    const refused = await rpc(
      client,
      PROD,
      "SearchSources",
      { box, query: { limit: 1, page_token: search.next_page_token } },
      admin,
    );
    expect(refused.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(fieldViolations(refused).map((v) => v.field)).toEqual(["query.page_token"]);
  });

  it("an instant not in the past reads the current ledger", async () => {
    const future = ts(iso(Date.now() + 3600_000));
    for (const token of [admin, userA, userB]) {
      const current = await grpcList(token, { limit: 1000 });
      expect(await grpcList(token, { limit: 1000, as_of: future })).toEqual(current);
    }
    const gone = await rpc(client, PROD, "GetSource", { id: known.a2.id, as_of: future }, userA);
    expect(gone.code).toBe(grpc.status.NOT_FOUND);
    const live = await rpcOk(client, PROD, "GetSource", { id: known.a1.id, as_of: future }, userA);
    expect(live).toEqual(await rpcOk(client, PROD, "GetSource", { id: known.a1.id }, userA));
  });

  it("an out-of-range Timestamp is INVALID_ARGUMENT at as_of (query.as_of in a search)", async () => {
    const bad = [
      { seconds: "253402300800", nanos: 0 },
      { seconds: "-62135596801", nanos: 0 },
      { seconds: "1700000000", nanos: 1_000_000_000 },
      { seconds: "1700000000", nanos: -1 },
    ];
    for (const as_of of bad) {
      const listed = await rpc(client, PROD, "ListSources", { as_of }, userA);
      expect(listed.code, JSON.stringify(as_of)).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(listed).map((v) => v.field)).toEqual(["as_of"]);
      const got = await rpc(client, PROD, "GetSource", { id: known.a1.id, as_of }, userA);
      expect(got.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(got).map((v) => v.field)).toEqual(["as_of"]);
      const searched = await rpc(
        client,
        PROD,
        "SearchSources",
        { point: { lon: 10, lat: 10 }, query: { as_of } },
        userA,
      );
      expect(searched.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(searched).map((v) => v.field)).toEqual(["query.as_of"]);
    }
  });

  it("the sandbox service refuses as_of (INVALID_ARGUMENT with the sandbox's sentence)", async () => {
    const [record] = await restCreate(userB, flat("sb-grpc", cell(0, 0, 10, 10)), "sandbox");
    for (const as_of of [ts(iso(T.a1)), ts(iso(Date.now() + 3600_000))]) {
      const listed = await rpc(client, SANDBOX, "ListSources", { as_of }, userB);
      expect(listed.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(listed)).toEqual([
        expect.objectContaining({ field: "as_of", description: SANDBOX_REFUSAL }),
      ]);
      const got = await rpc(client, SANDBOX, "GetSource", { id: record.id, as_of }, userB);
      expect(got.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(got)).toEqual([expect.objectContaining({ field: "as_of", description: SANDBOX_REFUSAL })]);
      const searched = await rpc(
        client,
        SANDBOX,
        "SearchSources",
        { point: { lon: 10, lat: 10 }, query: { as_of } },
        userB,
      );
      expect(searched.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolations(searched)).toEqual([
        expect.objectContaining({ field: "query.as_of", description: SANDBOX_REFUSAL }),
      ]);
    }
  });
});

// ---- Connect JSON ---------------------------------------------------------------------------------------------

describe("Connect JSON as_of", () => {
  async function connect(service: ServiceName, method: string, body: Json, token: string) {
    const res = await fetch(`${server.baseUrl}/sourceledger.v2.${service}/${method}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as Json };
  }

  it("ListSources and GetSource take asOf as an RFC 3339 string: the same ledger as REST", async () => {
    for (const t of [T.b1, T.delB1 - 1, T.delB1, T.delA2, T.a2b]) {
      const answer = await connect(PROD, "ListSources", { asOf: iso(t), limit: 1000 }, admin);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const sources = (answer.body.sources ?? []) as Json[];
      expect(sources.map((s) => labelOf(s.id))).toEqual(expectedAt(t, null));
      expect(sources.map((s) => s.conflict === true)).toEqual(expectedAt(t, null).map((l) => flagAt(l, t)));
      expect(sources.map((s) => Date.parse(s.createdAt))).toEqual(expectedAt(t, null).map((l) => known[l].createdAt));
    }
    const got = await connect(PROD, "GetSource", { id: known.b1.id, asOf: iso(T.a3) }, userB);
    expect(got.status).toBe(200);
    expect(got.body.source.conflict).toBe(true);
    const gone = await connect(PROD, "GetSource", { id: known.b1.id, asOf: iso(T.delB1) }, userB);
    expect(gone.status).toBe(404);
    expect(gone.body.code).toBe("not_found");
  });

  it("a malformed asOf is refused; the sandbox refuses asOf", async () => {
    const malformed = await connect(PROD, "ListSources", { asOf: "yesterday" }, userA);
    expect(malformed.status).toBe(400);
    expect(malformed.body.code).toBe("invalid_argument");
    const sandbox = await connect(SANDBOX, "ListSources", { asOf: iso(T.a1) }, userA);
    expect(sandbox.status).toBe(400);
    expect(sandbox.body.code).toBe("invalid_argument");
    expect(JSON.stringify(sandbox.body)).toContain(SANDBOX_REFUSAL);
  });
});

// ---- tokens of a listing at an instant not yet past ----------------------------------------------------------
//
// The ledger binds a page token to `as_of` as the caller gave it, past or not (src/ledger/ledger.ts
// bindingOf): the listing reads the current ledger until the instant passes, and its tokens hold.

describe("a listing at an instant that is not yet past", () => {
  it("its Link still holds once the instant has passed (tokens do not expire, §12)", async () => {
    const instant = iso(Date.now() + 1_500);
    const first = await restList(admin, { limit: 1, as_of: instant });
    expect(first.status, first.text).toBe(200);
    expect(first.link).not.toBeNull();
    expect(new URL(first.link!, "http://x").searchParams.get("as_of")).toBe(instant);
    await sleep(Date.parse(instant) - Date.now() + 50);
    const next = await server.request("GET", first.link!, { token: admin });
    const text = await next.text();
    expect(next.status, text).toBe(200);
  });

  it("its page token is refused without as_of (a token of an as_of listing is bound to the instant)", async () => {
    const first = await restList(admin, { limit: 1, as_of: iso(Date.now() + 3600_000) });
    expect(first.status, first.text).toBe(200);
    const res = await server.request("GET", `/sources?limit=1&page_token=${tokenOf(first.link!)}`, { token: admin });
    await expectViolation(res, "/query/page_token", "page_token does not belong to this listing");
  });
});
