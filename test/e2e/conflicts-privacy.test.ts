/**
 * The counterpart rule of docs/api.md §14 is absolute: a caller who is not an admin never receives
 * another account's source ids, alt_ids, account id, actor names or geometry, through any endpoint,
 * protocol or error. Two accounts whose sources conflict (and stop conflicting) are built with
 * distinctive values; then each calls every endpoint over REST, gRPC and Connect JSON (list, get,
 * search, history, conflicts, as_of reads, a create that conflicts, errors, a delete, the sandbox,
 * /metrics; over REST also GeoJSON answers and the OGC API items) and
 * every response's status, headers, body and trailers is searched for the other's values.
 * Calls naming the other's ids answer exactly as for unknown ids. The opaque `ref` is stable across
 * calls, protocols and restarts, the same from both sides, different across pairs, and keyed by the
 * ledger's secret (configuration). Admins see the counterpart's id, alt_id and account_id.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { LedgerGrpc } from "./grpc-support.js";
import {
  box,
  type Counterpart,
  type Created,
  coordinateNeedles,
  HistoryClient,
  type HistoryEvent,
  leaks,
  outline,
  type PolygonGeometry,
  PROTOCOLS,
  type Protocol,
  type RawAnswer,
  type SourceSpec,
} from "./history-support.js";

let server: TestServer;
let rpc: LedgerGrpc;
const clients = {} as Record<Protocol, HistoryClient>;

const tag = `${process.pid}`;

/** One account of the scenario, with everything of it the other must never see. */
interface Party {
  account: string;
  actor: string;
  subject: string;
  token: string;
  sources: Record<string, Created>;
  /** Ids of its sources deleted since (by the scenario or a sweep). */
  deleted: Set<string>;
  geometries: PolygonGeometry[];
}

// Distinctive coordinates (no digit run of one party's appears in the other's). A's sources
// cover the area [71.40, 71.81] × [-33.31, -33.10]; B's lie in and across it.
const A_GEOMETRY = {
  a1: box(71.4037261859, -33.3048172635, 71.7037261859, -33.1048172635),
  a2: box(71.5046382917, -33.2051928374, 71.5546382917, -33.1551928374),
  a3: box(71.7037261859, -33.2565656561, 71.8065656561, -33.1565656561),
};
const B_GEOMETRY = {
  b1: box(71.4719283746, -33.2582910473, 71.5719283746, -33.1582910473),
  b2: box(71.6364758291, -33.2791837465, 71.7364758291, -33.1791837465),
  b3: box(12.9182736455, 45.1928374655, 12.9282736455, 45.2028374655),
};
/** Where each party later creates a source overlapping the other's (its own, fresh values). */
const A_LATER = box(71.4523987612, -33.2234987612, 71.5123987612, -33.1834987612); // over b1
const B_LATER = box(71.4143219876, -33.2943219876, 71.4443219876, -33.2643219876); // over a1 only

const PERIOD = { start_at: "2024-01-01T00:00:00.000Z", end_at: "2025-01-01T00:00:00.000Z" };

let A: Party;
let B: Party;
/** Instants just after each step of the scenario: `as_of` reads see the ledger as it stood then. */
const instants: string[] = [];
/** The last of them before B's delete: every source of both was live, and flagged where it conflicted. */
let beforeTheDelete: string;

async function party(prefix: string, account: string): Promise<Party> {
  const actor = `${prefix}-ACTOR-${tag}`;
  const subject = `${prefix}-SUB-${tag}`;
  const token = await server.userToken(account, { sub: subject, [server.issuer.claim("client_name")]: actor });
  return { account, actor, subject, token, sources: {}, deleted: new Set(), geometries: [] };
}

function spec(owner: Party, name: string, geometry: PolygonGeometry): SourceSpec {
  owner.geometries.push(geometry);
  return { alt_id: altOf(owner, name), geometry, ...PERIOD };
}

const altOf = (owner: Party, name: string) => `${owner === A ? "PRIVATE-ALT-A" : "SECRET-ALT-B"}-${name}-${tag}`;

/**
 * Everything of `owner` another account must never receive (ids only when `withIds`): its account,
 * actor and subject, its alt_ids (all start with its prefix), its source ids (the sweeps' too) and
 * every coordinate of its geometries.
 */
function needles(owner: Party, withIds = true): string[] {
  const values = [owner.account, owner.actor, owner.subject, owner === A ? "PRIVATE-" : "SECRET-"];
  for (const name of Object.keys(owner.sources)) values.push(altOf(owner, name));
  if (withIds) values.push(...Object.values(owner.sources).map((s) => s.id), ...owner.deleted);
  for (const geometry of owner.geometries) values.push(...coordinateNeedles(geometry));
  return values;
}

beforeAll(async () => {
  server = await startTestServer();
  rpc = new LedgerGrpc(server.port);
  for (const protocol of PROTOCOLS) clients[protocol] = new HistoryClient(server, rpc, protocol);
  A = await party("PRIVATE-A", `PRIVATE-ACCT-A-${tag}`);
  B = await party("SECRET-B", `SECRET-ACCT-B-${tag}`);

  // The scenario, over REST (its answers are not scanned: each party sees its own here).
  const setup = new HistoryClient(server, rpc, "rest");
  const make = async (owner: Party, name: string, geometry: PolygonGeometry) => {
    owner.sources[name] = await setup.createOne(owner.token, "production", spec(owner, name, geometry));
    instants.push(new Date().toISOString());
  };
  await make(A, "a1", A_GEOMETRY.a1); //         no conflict yet
  await make(B, "b1", B_GEOMETRY.b1); //         B's create: a1 × b1
  await make(A, "a2", A_GEOMETRY.a2); //         A's create: a2 × a1 (one account), a2 × b1
  await make(B, "b2", B_GEOMETRY.b2); //         B's create: b2 × a1
  await make(A, "a3", A_GEOMETRY.a3); //         A's create: a3 × b2 (a3 only touches a1)
  await make(B, "b3", B_GEOMETRY.b3); //         far from everything
  beforeTheDelete = instants[instants.length - 1];
  expect((await setup.removeByAlt(B.token, "production", altOf(B, "b2"))).ok).toBe(true); // clears a1 × b2, a3 × b2
  B.deleted.add(B.sources.b2.id);
  instants.push(new Date().toISOString());
  A.geometries.push(A_LATER);
  B.geometries.push(B_LATER);

  // The needles really are apart: none of either party's needles is found in the other's own values.
  const ownText = (owner: Party) =>
    JSON.stringify([owner.account, owner.actor, owner.geometries.map((g) => g.coordinates)]);
  expect(needles(A).filter((n) => ownText(B).includes(n))).toEqual([]);
  expect(needles(B).filter((n) => ownText(A).includes(n))).toEqual([]);
  expect(coordinateNeedles(A_LATER).filter((n) => ownText(B).includes(n))).toEqual([]);
  expect(coordinateNeedles(B_LATER).filter((n) => ownText(A).includes(n))).toEqual([]);
});

afterAll(async () => {
  rpc?.close();
  await server?.close();
});

/** The ref of a counterpart that must be one (fails otherwise). */
function refOf(counterpart: Counterpart | undefined): string {
  expect(Object.keys(counterpart ?? {})).toEqual(["ref"]);
  return counterpart!.ref!;
}

const conflictEvents = (events: HistoryEvent[]) => events.filter((e) => e.type.startsWith("conflict_"));

describe("the scenario as each party sees it", () => {
  it("A's history and conflicts: refs for B's side, id and alt_id for A's own, by null where B acted", async () => {
    const rest = clients.rest;
    const { a1, a2, a3 } = A.sources;
    const h1 = await rest.events(A.token, "production", a1.id);
    expect(outline(h1)).toEqual([
      "1 created",
      "2 conflict_set", // b1 (B's create)
      "3 conflict_set", // a2 (A's create)
      "4 conflict_set", // b2 (B's create)
      "5 conflict_cleared", // b2 (B's delete)
    ]);
    expect(h1.map((e) => e.by)).toEqual([A.actor, null, A.actor, null, null]);
    expect(h1[2].counterpart).toEqual({ id: a2.id, alt_id: a2.altId });
    expect(refOf(h1[4].counterpart)).toBe(refOf(h1[3].counterpart));
    const c1 = await rest.conflictList(A.token, "production", a1.id);
    expect(c1.map((c) => c.counterpart)).toEqual([h1[1].counterpart, { id: a2.id, alt_id: a2.altId }]);
    expect(await rest.flag(A.token, "production", a1.id)).toBe(true);

    const h3 = await rest.events(A.token, "production", a3.id);
    expect(outline(h3)).toEqual(["1 created", "2 conflict_set", "3 conflict_cleared"]);
    expect(
      h3.map((e) => e.by),
      "A's own create with B's source: hidden too (§14)",
    ).toEqual([A.actor, null, null]);
    expect(await rest.conflictList(A.token, "production", a3.id)).toEqual([]);
    expect(await rest.flag(A.token, "production", a3.id)).toBe(false);
  });

  it("refs: stable across calls and protocols, the same from both sides, different across pairs, never an id", async () => {
    const { a1, a2, a3 } = A.sources;
    const { b1, b2 } = B.sources;
    const refsSeenBy = async (protocol: Protocol) => {
      const api = clients[protocol];
      const h1 = await api.events(A.token, "production", a1.id);
      const h2 = await api.events(A.token, "production", a2.id);
      const h3 = await api.events(A.token, "production", a3.id);
      const fromA = {
        a1b1: refOf(h1[1].counterpart),
        a1b2: refOf(h1[3].counterpart),
        a2b1: refOf(conflictEvents(h2).find((e) => e.counterpart?.ref)?.counterpart),
        a3b2: refOf(h3[1].counterpart),
      };
      expect(refOf(h1[4].counterpart)).toBe(fromA.a1b2);
      expect(refOf(h3[2].counterpart)).toBe(fromA.a3b2);
      const c1 = await api.conflictList(A.token, "production", a1.id);
      const c2 = await api.conflictList(A.token, "production", a2.id);
      expect(refOf(c1[0].counterpart)).toBe(fromA.a1b1);
      // Both found by one create (the same detected_at): in the order a2's history recorded them
      // (docs/api.md §14).
      const recorded = conflictEvents(h2).map((e) => e.counterpart);
      expect(recorded).toHaveLength(2);
      expect(c2.map((c) => c.counterpart)).toEqual(recorded);
      expect(c2.map((c) => c.counterpart)).toEqual(
        expect.arrayContaining([{ id: a1.id, alt_id: a1.altId }, { ref: fromA.a2b1 }]),
      );

      // B's side of the same pairs: its live b1 and its deleted b2's history.
      const hb1 = await api.events(B.token, "production", b1.id);
      expect(outline(hb1)).toEqual(["1 created", "2 conflict_set", "3 conflict_set"]);
      const hb2 = await api.events(B.token, "production", b2.id);
      expect(outline(hb2)).toEqual(["1 created", "2 conflict_set", "3 conflict_set", "4 deleted"]);
      const cb1 = await api.conflictList(B.token, "production", b1.id);
      expect(cb1.map((c) => refOf(c.counterpart))).toEqual([fromA.a1b1, fromA.a2b1]);
      expect(conflictEvents(hb1).map((e) => refOf(e.counterpart))).toEqual([fromA.a1b1, fromA.a2b1]);
      expect(conflictEvents(hb2).map((e) => refOf(e.counterpart))).toEqual([fromA.a1b2, fromA.a3b2]);
      // B sees A's actor nowhere either: the a2 × b1 pair came from A's create.
      expect(hb1.map((e) => e.by)).toEqual([B.actor, null, null]);
      return fromA;
    };

    const rest = await refsSeenBy("rest");
    expect(new Set(Object.values(rest)).size, "four pairs, four refs").toBe(4);
    const ids = [...Object.values(A.sources), ...Object.values(B.sources)].map((s) => s.id);
    for (const ref of Object.values(rest)) {
      expect(ref).toMatch(/^[A-Za-z0-9_-]{22}$/);
      for (const id of ids) {
        expect(ref.includes(id) || id.includes(ref)).toBe(false);
        expect(ref).not.toBe(Buffer.from(id).toString("base64url").slice(0, 22));
      }
    }
    expect(await refsSeenBy("rest"), "again").toEqual(rest);
    expect(await refsSeenBy("grpc")).toEqual(rest);
    expect(await refsSeenBy("connect")).toEqual(rest);
  });

  it.each(PROTOCOLS)(
    "an admin over %s sees id, alt_id and account_id of both sides, and every actor",
    async (protocol) => {
      const api = clients[protocol];
      const admin = await server.adminToken();
      const { a1, a2 } = A.sources;
      const { b1, b2 } = B.sources;
      const full = (owner: Party, source: Created) => ({
        id: source.id,
        alt_id: source.altId,
        account_id: owner.account,
      });
      expect((await api.conflictList(admin, "production", a1.id)).map((c) => c.counterpart)).toEqual([
        full(B, b1),
        full(A, a2),
      ]);
      expect((await api.conflictList(admin, "production", b1.id)).map((c) => c.counterpart)).toEqual([
        full(A, a1),
        full(A, a2),
      ]);
      const h1 = await api.events(admin, "production", a1.id);
      expect(h1.map((e) => e.by)).toEqual([A.actor, B.actor, A.actor, B.actor, B.actor]);
      expect(h1.slice(1).map((e) => e.counterpart)).toEqual([full(B, b1), full(A, a2), full(B, b2), full(B, b2)]);
      const hb2 = await api.events(admin, "production", b2.id);
      expect(hb2.map((e) => e.by)).toEqual([B.actor, B.actor, A.actor, B.actor]);
    },
  );
});

/**
 * Every endpoint as `viewer`, over `protocol`: reads of its own sources, a list and search over
 * the whole area, a create overlapping the other's source (its answer, history and conflicts), the
 * errors of creates over it, the delete and what follows it, and the sandbox.
 */
async function sweep(api: HistoryClient, viewer: Party, overlapping: PolygonGeometry): Promise<void> {
  const env = "production";
  const everything = box(71.0, -34.0, 72.0, -32.0);
  const world = box(-180, -90, 180, 90);
  const own = Object.values(viewer.sources).filter((s) => !viewer.deleted.has(s.id));
  const ownIds = own.map((s) => s.id);

  for (const listed of [
    await api.list(viewer.token, env),
    await api.list(viewer.token, env, { conflict: true }),
    await api.list(viewer.token, env, { conflict: false }),
    await api.list(viewer.token, env, { bbox: [71.0, -34.0, 72.0, -32.0] }),
    await api.search(viewer.token, env, everything),
    await api.search(viewer.token, env, world),
  ]) {
    for (const id of listed) expect(ownIds).toContain(id);
  }
  for (const source of Object.values(viewer.sources)) {
    const live = !viewer.deleted.has(source.id);
    expect((await api.get(viewer.token, env, source.id)).ok).toBe(live);
    expect((await api.history(viewer.token, env, source.id)).ok).toBe(true);
    expect((await api.conflicts(viewer.token, env, source.id)).ok).toBe(live);
  }

  // The ledger as it stood after each step of the scenario (as_of), when the other's sources
  // were live and flagged its own.
  const everOwn = Object.values(viewer.sources).map((s) => s.id);
  expect(await api.list(viewer.token, env, { asOf: beforeTheDelete, conflict: true }), "flagged then").not.toEqual([]);
  for (const asOf of instants) {
    for (const conflict of [undefined, true]) {
      for (const id of await api.list(viewer.token, env, { asOf, conflict })) expect(everOwn).toContain(id);
    }
    for (const source of Object.values(viewer.sources)) await api.get(viewer.token, env, source.id, "get as_of", asOf);
  }
  if (api.protocol === "rest") {
    // GeoJSON answers and the OGC API items (docs/api.md §16), with the same filters and instants.
    // Those that must show the viewer's own sources are checked to (the scan then reads real answers).
    const first = own[0].id;
    const flagged = own.find((s) => s.conflict)?.id as string;
    const then = encodeURIComponent(beforeTheDelete);
    const showing: [path: string, ownId: string | null][] = [
      ["/sources?f=geojson", first],
      ["/sources?f=geojson&conflict=true", flagged],
      [`/sources/${first}?f=geojson`, first],
      ["/ogc/collections/sources/items", first],
      ["/ogc/collections/sources/items?conflict=true", flagged],
      ["/ogc/collections/sources/items?bbox=71,-34,72,-32", first],
      [`/ogc/collections/sources/items/${first}`, first],
      [`/sources?f=geojson&as_of=${then}`, first],
      [`/ogc/collections/sources/items?as_of=${then}`, first],
      [`/ogc/collections/sources/items?conflict=true&as_of=${then}`, flagged],
      ...instants.flatMap((asOf): [string, null][] => {
        const at = encodeURIComponent(asOf);
        return [
          [`/sources?f=geojson&as_of=${at}`, null],
          [`/ogc/collections/sources/items?as_of=${at}`, null],
          [`/ogc/collections/sources/items?conflict=true&as_of=${at}`, null],
        ];
      }),
    ];
    expect(flagged, "the viewer has a flagged source").toBeDefined();
    for (const [path, ownId] of showing) {
      const answer = await api.restGet(viewer.token, path);
      expect(answer.status, path).toBe(200);
      if (ownId !== null) expect(answer.text, path).toContain(ownId);
    }
  }

  const later = await api.createOne(viewer.token, env, {
    alt_id: `${viewer === A ? "PRIVATE-ALT-A" : "SECRET-ALT-B"}-later-${api.protocol}-${tag}`,
    geometry: overlapping,
    ...PERIOD,
  });
  expect(later.conflict, "the create conflicts with the other's source").toBe(true);
  viewer.deleted.add(later.id);
  const conflicts = await api.conflictList(viewer.token, env, later.id);
  expect(conflicts.some((c) => c.counterpart.ref !== undefined)).toBe(true);
  await api.events(viewer.token, env, later.id);

  // Errors of creates over the other's source.
  const taken = await api.tryCreate(viewer.token, env, [{ alt_id: own[0].altId, geometry: overlapping, ...PERIOD }]);
  expect(taken.ok).toBe(false);
  const backwards = await api.tryCreate(viewer.token, env, [
    { alt_id: `backwards-${api.protocol}`, geometry: overlapping, start_at: PERIOD.end_at, end_at: PERIOD.start_at },
  ]);
  expect(backwards.ok).toBe(false);
  const [x1, y1] = overlapping.coordinates[0][0];
  const [x2, y2] = overlapping.coordinates[0][2];
  const bowtie: PolygonGeometry = {
    type: "Polygon",
    coordinates: [
      [
        [x1, y1],
        [x2, y2],
        [x2, y1],
        [x1, y2],
        [x1, y1],
      ],
    ],
  };
  const invalid = await api.tryCreate(viewer.token, env, [
    { alt_id: `bowtie-${api.protocol}`, geometry: bowtie, ...PERIOD },
  ]);
  expect(invalid.ok).toBe(false);
  const batch = await api.tryCreate(viewer.token, env, [
    { alt_id: `batch-${api.protocol}`, geometry: overlapping, ...PERIOD },
    { alt_id: `batch-${api.protocol}`, geometry: overlapping, ...PERIOD },
  ]);
  expect(batch.ok).toBe(false);

  // The delete and after it.
  expect((await api.remove(viewer.token, env, later.id)).ok).toBe(true);
  expect((await api.history(viewer.token, env, later.id)).ok).toBe(true);
  expect((await api.conflicts(viewer.token, env, later.id)).ok).toBe(false);
  expect((await api.remove(viewer.token, env, later.id)).ok).toBe(false);
  for (const source of own) await api.history(viewer.token, env, source.id);

  // The sandbox, over the same area.
  const sandboxed = await api.createOne(viewer.token, "sandbox", {
    alt_id: `sandboxed-${api.protocol}`,
    geometry: overlapping,
    ...PERIOD,
  });
  await api.list(viewer.token, "sandbox");
  await api.search(viewer.token, "sandbox", everything);
  await api.events(viewer.token, "sandbox", sandboxed.id);
  await api.conflictList(viewer.token, "sandbox", sandboxed.id);
  expect((await api.remove(viewer.token, "sandbox", sandboxed.id)).ok).toBe(true);
}

describe("nothing of the other account reaches a caller who is not an admin", () => {
  for (const protocol of PROTOCOLS) {
    it(`A over ${protocol}: every endpoint, no B id, alt_id, account, actor or coordinate`, async () => {
      const api = new HistoryClient(server, rpc, protocol);
      await sweep(api, A, A_LATER);
      expect(api.transcript.length).toBeGreaterThan(25);
      const text = api.transcript.map((t) => t.text).join("\n");
      expect(text, "the scan sees refs (the conflicts were read)").toMatch(/"ref"/);
      expect(leaks(api.transcript, needles(B))).toEqual([]);
    });

    it(`B over ${protocol}: every endpoint, no A id, alt_id, account, actor or coordinate`, async () => {
      const api = new HistoryClient(server, rpc, protocol);
      await sweep(api, B, B_LATER);
      expect(leaks(api.transcript, needles(A))).toEqual([]);
    });

    it(`A over ${protocol} naming B's ids and alt_ids: answered exactly as unknown ones, nothing else of B`, async () => {
      const api = new HistoryClient(server, rpc, protocol);
      const unknownId = "src_00000000000000000000000000";
      for (const source of Object.values(B.sources)) {
        // As of an instant when every one of B's sources was live (b2 too, deleted since).
        const theirsThen = await api.get(A.token, "production", source.id, "get as_of", beforeTheDelete);
        const unknownThen = await api.get(A.token, "production", unknownId, "get as_of", beforeTheDelete);
        expect(theirsThen.ok, `get as_of ${source.id}`).toBe(false);
        expect(JSON.stringify(theirsThen).replaceAll(source.id, unknownId), "get as_of of B's source").toBe(
          JSON.stringify(unknownThen),
        );
        for (const call of ["get", "history", "conflicts", "remove"] as const) {
          const theirs = await api[call](A.token, "production", source.id);
          const unknown = await api[call](A.token, "production", unknownId);
          expect(theirs.ok, `${call} ${source.id}`).toBe(false);
          expect(JSON.stringify(theirs).replaceAll(source.id, unknownId), `${call} of B's source`).toBe(
            JSON.stringify(unknown),
          );
        }
      }
      for (const name of Object.keys(B.sources)) {
        const alt = altOf(B, name);
        const theirs = await api.removeByAlt(A.token, "production", alt);
        const unknown = await api.removeByAlt(A.token, "production", "no-such-alt");
        expect(theirs.ok).toBe(false);
        expect(JSON.stringify(theirs).replaceAll(alt, "no-such-alt")).toBe(JSON.stringify(unknown));
      }
      // Named in the request, echoed at most: nothing else of B.
      expect(
        leaks(
          api.transcript,
          needles(B, false).filter((n) => !n.startsWith("SECRET-ALT-B") && n !== "SECRET-"),
        ),
      ).toEqual([]);
    });
  }

  it.each(PROTOCOLS)(
    "the scan finds B's values where an admin may see them (over %s): it would catch a leak",
    async (protocol) => {
      const api = new HistoryClient(server, rpc, protocol);
      const admin = await server.adminToken();
      const { a1 } = A.sources;
      const { b1 } = B.sources;
      await api.conflicts(admin, "production", a1.id);
      await api.history(admin, "production", a1.id);
      await api.get(admin, "production", b1.id, "get as_of", beforeTheDelete);
      if (protocol === "rest") {
        // GeoJSON and OGC renderings of B's sources are scanned as well.
        const at = encodeURIComponent(beforeTheDelete);
        for (const path of [`/sources?f=geojson&as_of=${at}`, `/ogc/collections/sources/items?as_of=${at}`]) {
          const probe = new HistoryClient(server, rpc, protocol);
          expect((await probe.restGet(admin, path)).status).toBe(200);
          const seen = leaks(probe.transcript, needles(B)).join("\n");
          for (const value of [b1.id, b1.altId, String(B_GEOMETRY.b1.coordinates[0][0][0])]) {
            expect(seen, path).toContain(JSON.stringify(value));
          }
        }
      }
      const found = leaks(api.transcript, needles(B)).join("\n");
      for (const value of [B.account, B.actor, b1.id, b1.altId, String(B_GEOMETRY.b1.coordinates[0][0][0])]) {
        expect(found).toContain(JSON.stringify(value));
      }
      // And A's own sweep sees A's own values (the transcript holds what A received).
      const own = new HistoryClient(server, rpc, protocol);
      await own.history(A.token, "production", a1.id);
      const ownFound = leaks(own.transcript, needles(A)).join("\n");
      for (const value of [A.account, A.actor, a1.id, a1.altId, String(A_GEOMETRY.a1.coordinates[0][0][0])]) {
        expect(ownFound).toContain(JSON.stringify(value));
      }
    },
  );

  it("the unauthenticated endpoints (/metrics, /healthz, /readyz) carry nothing of either account", async () => {
    const transcript: RawAnswer[] = [];
    for (const path of ["/metrics", "/healthz", "/readyz"]) {
      const res = await server.request("GET", path);
      transcript.push({ label: path, text: `${[...res.headers].join("\n")}\n${await res.text()}` });
    }
    expect(leaks(transcript, [...needles(A), ...needles(B)])).toEqual([]);
  });
});

describe("the ref is keyed by the ledger's secret (configuration)", () => {
  it("the same pair keeps its ref across restarts with the same secret and the store's own secret; another secret gives another ref", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ledger-refs-"));
    const path = join(dir, "ledger.sqlite");
    const secret1 = Buffer.alloc(32, 7).toString("base64");
    const secret2 = Buffer.alloc(32, 9).toString("base64");
    /** Starts a server on the shared file, runs `body`, closes it. */
    const withServer = async <T>(secret: string | null, body: (s: TestServer, api: HistoryClient) => Promise<T>) => {
      const s = await startTestServer({ SQLITE_PATH: path, ...(secret ? { LEDGER_SECRET: secret } : {}) });
      const client = new LedgerGrpc(s.port);
      try {
        return await body(s, new HistoryClient(s, client, "rest"));
      } finally {
        client.close();
        await s.close();
      }
    };
    try {
      // Every test server has its own issuer, so each reads with fresh tokens of the same accounts.
      const ids = await withServer(secret1, async (s, api) => {
        const a = await api.createOne(await s.userToken("acct-ref-a"), "production", {
          alt_id: "ref-a",
          geometry: box(10, 10, 10.1, 10.1),
        });
        const b = await api.createOne(await s.userToken("acct-ref-b"), "production", {
          alt_id: "ref-b",
          geometry: box(10.05, 10, 10.15, 10.1),
        });
        expect(b.conflict).toBe(true);
        return { a: a.id, b: b.id };
      });
      const refWith = (secret: string | null) =>
        withServer(secret, async (s, api) => {
          const [fromA] = await api.conflictList(await s.userToken("acct-ref-a"), "production", ids.a);
          const [fromB] = await api.conflictList(await s.userToken("acct-ref-b"), "production", ids.b);
          expect(fromB.counterpart).toEqual(fromA.counterpart);
          return refOf(fromA.counterpart);
        });
      const first = await refWith(secret1);
      expect(await refWith(secret1), "the same secret, after a restart").toBe(first);
      const other = await refWith(secret2);
      expect(other, "another secret").not.toBe(first);
      const stored = await refWith(null);
      expect(await refWith(null), "the store's own secret, after a restart").toBe(stored);
      expect(new Set([first, other, stored]).size).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
