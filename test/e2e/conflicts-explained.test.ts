/**
 * Explained conflicts (docs/api.md §14) through the real server over REST, gRPC and Connect JSON:
 * the measure from both sides (the geodesic overlap area equal, the fractions swapped, the overlap
 * period the intersection of the periods, the shared attribute types, `[]` when a side is untyped),
 * `detected_at` at the later create, the same explanation as the `conflict_set` event, the
 * counterpart's forms (own account, another account, admin), the list shrinking as counterparts
 * are deleted with the flag "has at least one", not found for deleted and unknown sources, the
 * sandbox's constant `[]`; and the three protocols answering the same.
 */
import { describe, expect, it } from "vitest";
import { type Comb, combGeometry, combIntersectionCells, zigzag } from "../geo/fixtures.js";
import {
  box,
  createdAtOf,
  type Env,
  type ExplainedConflict,
  expectClose,
  explanationOf,
  freshArea,
  type HistoryEvent,
  PROTOCOLS,
  rectangleAreaM2,
  unique,
  useHistoryServer,
} from "./history-support.js";

const h = useHistoryServer();

const env: Env = "production";

async function twoAccounts(): Promise<{ tokenA: string; tokenB: string; accountA: string; accountB: string }> {
  const accountA = unique("acct-A");
  const accountB = unique("acct-B");
  return { accountA, accountB, tokenA: await h.server.userToken(accountA), tokenB: await h.server.userToken(accountB) };
}

/** The `conflict_set` events of a history. */
const sets = (events: HistoryEvent[]) => events.filter((e) => e.type === "conflict_set");

describe.each(PROTOCOLS)("%s", (protocol) => {
  const api = () => h.clients[protocol];

  it("a pair across accounts, explained from both sides: equal area, swapped fractions, intersected period, shared types", async () => {
    const { tokenA, tokenB } = await twoAccounts();
    const cell = freshArea();
    const geometryA = cell(0, 0, 10, 10);
    const geometryB = cell(5, 0, 25, 10); // twice A's width; the overlap is half of A, a quarter of B
    const a = await api().createOne(tokenA, env, {
      alt_id: unique("alt-a"),
      geometry: geometryA,
      start_at: "2024-01-01T00:00:00.000Z",
      end_at: "2025-01-01T00:00:00.000Z",
      attribute_type: ["CARBON_REMOVAL", "CI_SCORE"],
    });
    const b = await api().createOne(tokenB, env, {
      alt_id: unique("alt-b"),
      geometry: geometryB,
      start_at: "2024-06-15T12:34:56.789Z",
      end_at: "2026-01-01T00:00:00.000Z",
      attribute_type: ["CI_SCORE", "WATER_QUALITY", "CARBON_REMOVAL"],
    });
    expect(b.conflict).toBe(true);

    const fromA = await api().conflictList(tokenA, env, a.id);
    const fromB = await api().conflictList(tokenB, env, b.id);
    expect(fromA).toHaveLength(1);
    expect(fromB).toHaveLength(1);
    const [ca, cb] = [fromA[0], fromB[0]];

    const overlap = rectangleAreaM2(cell(5, 0, 10, 10));
    expectClose(ca.overlap_area_m2, overlap, 1e-6, "overlap area");
    expect(cb.overlap_area_m2, "the same area from both sides").toBe(ca.overlap_area_m2);
    expectClose(ca.overlap_fraction, 0.5, 1e-9, "A's fraction");
    expectClose(ca.counterpart_overlap_fraction, 0.25, 1e-9, "B's fraction from A");
    expectClose(ca.overlap_fraction, ca.overlap_area_m2 / rectangleAreaM2(geometryA), 1e-6, "A's fraction of A's area");
    expect(cb.overlap_fraction, "swapped").toBe(ca.counterpart_overlap_fraction);
    expect(cb.counterpart_overlap_fraction, "swapped").toBe(ca.overlap_fraction);
    for (const c of [ca, cb]) {
      expect(c.overlap_period).toEqual({ start_at: "2024-06-15T12:34:56.789Z", end_at: "2025-01-01T00:00:00.000Z" });
      expect([...c.shared_attribute_types].sort()).toEqual(["CARBON_REMOVAL", "CI_SCORE"]);
      expect(c.detected_at).toBe(createdAtOf(protocol, b.native));
      expect(Object.keys(c.counterpart)).toEqual(["ref"]);
    }
    expect(ca.counterpart).toEqual(cb.counterpart);

    // The conflict_set event of each side carries the same explanation.
    const [setA] = sets(await api().events(tokenA, env, a.id));
    const [setB] = sets(await api().events(tokenB, env, b.id));
    expect(explanationOf(setA)).toEqual(explanationOf(ca));
    expect(explanationOf(setB)).toEqual(explanationOf(cb));
    expect(setA.at).toBe(ca.detected_at);
    expect(setA.counterpart).toEqual(ca.counterpart);
  });

  it("shared_attribute_types is [] when either side (or both) is untyped", async () => {
    const cases: [string[], string[]][] = [
      [["BIODIVERSITY"], []],
      [[], ["WATER_QUANTITY", "CI_SCORE"]],
      [[], []],
    ];
    for (const [typesA, typesB] of cases) {
      const { tokenA, tokenB } = await twoAccounts();
      const cell = freshArea();
      const a = await api().createOne(tokenA, env, {
        alt_id: unique("alt-a"),
        geometry: cell(0, 0, 10, 10),
        attribute_type: typesA,
      });
      const b = await api().createOne(tokenB, env, {
        alt_id: unique("alt-b"),
        geometry: cell(0, 0, 10, 10),
        attribute_type: typesB,
      });
      expect(b.conflict, `${typesA} / ${typesB}`).toBe(true);
      for (const [token, id] of [
        [tokenA, a.id],
        [tokenB, b.id],
      ]) {
        const [conflict] = await api().conflictList(token, env, id);
        expect(conflict.shared_attribute_types, `${typesA} / ${typesB}`).toEqual([]);
        // The same geometry: all of each.
        expectClose(conflict.overlap_fraction, 1, 1e-9, "fraction");
        expectClose(conflict.counterpart_overlap_fraction, 1, 1e-9, "counterpart fraction");
        const [set] = sets(await api().events(token, env, id));
        expect(set.shared_attribute_types).toEqual([]);
      }
    }
  });

  it("the counterpart: id and alt_id in the caller's account, ref in another, id, alt_id and account_id for an admin", async () => {
    const { tokenA, tokenB, accountA, accountB } = await twoAccounts();
    const cell = freshArea();
    const a = await api().createOne(tokenA, env, { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) });
    const own = await api().createOne(tokenA, env, { alt_id: unique("alt-own"), geometry: cell(0, 8, 5, 18) });
    const b = await api().createOne(tokenB, env, { alt_id: unique("alt-b"), geometry: cell(8, 0, 18, 10) });
    const fromA = await api().conflictList(tokenA, env, a.id);
    expect(fromA.map((c) => c.counterpart)).toEqual([{ id: own.id, alt_id: own.altId }, { ref: expect.any(String) }]);
    expect(fromA[1].counterpart.ref).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const fromOwn = await api().conflictList(tokenA, env, own.id);
    expect(fromOwn.map((c) => c.counterpart)).toEqual([{ id: a.id, alt_id: a.altId }]);
    const fromB = await api().conflictList(tokenB, env, b.id);
    expect(fromB.map((c) => c.counterpart)).toEqual([fromA[1].counterpart]);

    const admin = await h.server.adminToken();
    const adminA = await api().conflictList(admin, env, a.id);
    expect(adminA.map((c) => c.counterpart)).toEqual([
      { id: own.id, alt_id: own.altId, account_id: accountA },
      { id: b.id, alt_id: b.altId, account_id: accountB },
    ]);
    const strip = (list: ExplainedConflict[]) => list.map(({ counterpart: _c, ...rest }) => rest);
    expect(strip(adminA)).toEqual(strip(fromA));
    const adminB = await api().conflictList(admin, env, b.id);
    expect(adminB.map((c) => c.counterpart)).toEqual([{ id: a.id, alt_id: a.altId, account_id: accountA }]);
  });

  it("several conflicts, oldest first; the list shrinks as counterparts go, the flag clears with the last; a deleted source is not found", async () => {
    const { tokenA, tokenB } = await twoAccounts();
    const cell = freshArea();
    const a = await api().createOne(tokenA, env, { alt_id: unique("alt-a"), geometry: cell(0, 0, 30, 10) });
    const b1 = await api().createOne(tokenB, env, { alt_id: unique("alt-b1"), geometry: cell(-5, 0, 5, 10) });
    const b2 = await api().createOne(tokenB, env, { alt_id: unique("alt-b2"), geometry: cell(10, 0, 20, 10) });
    const a2 = await api().createOne(tokenA, env, { alt_id: unique("alt-a2"), geometry: cell(25, 0, 35, 10) });
    const all = await api().conflictList(tokenA, env, a.id);
    expect(all).toHaveLength(3);
    const detected = all.map((c) => c.detected_at);
    expect(detected).toEqual([
      createdAtOf(protocol, b1.native),
      createdAtOf(protocol, b2.native),
      createdAtOf(protocol, a2.native),
    ]);
    expect(all[2].counterpart).toEqual({ id: a2.id, alt_id: a2.altId });
    expectClose(all[0].overlap_area_m2, rectangleAreaM2(cell(0, 0, 5, 10)), 1e-6, "b1's overlap");
    expectClose(all[1].overlap_area_m2, rectangleAreaM2(cell(10, 0, 20, 10)), 1e-6, "b2's overlap");
    expectClose(all[1].counterpart_overlap_fraction, 1, 1e-9, "b2 lies inside a");
    expect(new Set(all.map((c) => JSON.stringify(c.counterpart))).size).toBe(3);

    expect((await api().remove(tokenB, env, b2.id)).ok).toBe(true);
    expect(await api().conflictList(tokenA, env, a.id)).toEqual([all[0], all[2]]);
    expect(await api().flag(tokenA, env, a.id)).toBe(true);
    expect((await api().removeByAlt(tokenB, env, b1.altId)).ok).toBe(true);
    expect(await api().conflictList(tokenA, env, a.id)).toEqual([all[2]]);
    expect(await api().flag(tokenA, env, a.id)).toBe(true);

    // The deleted counterparts are not found, their conflicts with them.
    for (const id of [b1.id, b2.id]) {
      const listed = await api().conflicts(tokenB, env, id);
      expect(listed.ok ? "found" : listed.status).toBe(api().notFound);
    }
    expect((await api().remove(tokenA, env, a2.id)).ok).toBe(true);
    expect(await api().conflictList(tokenA, env, a.id)).toEqual([]);
    expect(await api().flag(tokenA, env, a.id)).toBe(false);
    // A later overlapping source finds it again.
    const b3 = await api().createOne(tokenB, env, { alt_id: unique("alt-b3"), geometry: cell(0, 0, 10, 10) });
    expect(b3.conflict).toBe(true);
    const again = await api().conflictList(tokenA, env, a.id);
    expect(again).toHaveLength(1);
    expect(again[0].counterpart.ref).not.toBe(all[0].counterpart.ref);
    expect(await api().flag(tokenA, env, a.id)).toBe(true);
  });

  it("periods overlapping by one millisecond conflict, the period is that millisecond; touching periods do not", async () => {
    const { tokenA, tokenB } = await twoAccounts();
    const cell = freshArea();
    const a = await api().createOne(tokenA, env, {
      alt_id: unique("alt-a"),
      geometry: cell(0, 0, 10, 10),
      start_at: "2024-01-01T00:00:00.000Z",
      end_at: "2025-01-01T00:00:00.000Z",
    });
    const touching = await api().createOne(tokenB, env, {
      alt_id: unique("alt-touch"),
      geometry: cell(0, 0, 10, 10),
      start_at: "2025-01-01T00:00:00.000Z",
      end_at: "2026-01-01T00:00:00.000Z",
    });
    expect(touching.conflict).toBe(false);
    expect(await api().conflictList(tokenB, env, touching.id)).toEqual([]);
    const b = await api().createOne(tokenB, env, {
      alt_id: unique("alt-b"),
      geometry: cell(0, 0, 10, 10),
      start_at: "2024-12-31T23:59:59.999Z",
      end_at: "2026-01-01T00:00:00.000Z",
    });
    expect(b.conflict).toBe(true);
    const [conflict] = await api().conflictList(tokenA, env, a.id);
    expect(conflict.overlap_period).toEqual({
      start_at: "2024-12-31T23:59:59.999Z",
      end_at: "2025-01-01T00:00:00.000Z",
    });
    expect(await api().conflictList(tokenA, env, a.id)).toHaveLength(1);
  });

  it("the sandbox has no conflicts: [] for overlapping sources; a deleted or unknown one is not found", async () => {
    const token = await h.server.userToken(unique("acct-sbx"));
    const cell = freshArea();
    const a = await api().createOne(token, "sandbox", { alt_id: unique("alt-a"), geometry: cell(0, 0, 10, 10) });
    const b = await api().createOne(token, "sandbox", { alt_id: unique("alt-b"), geometry: cell(0, 0, 10, 10) });
    expect(await api().conflictList(token, "sandbox", a.id)).toEqual([]);
    expect(await api().conflictList(token, "sandbox", b.id)).toEqual([]);
    expect((await api().remove(token, "sandbox", b.id)).ok).toBe(true);
    for (const id of [b.id, "sandbox_00000000-0000-4000-8000-000000000000", a.id.replace("sandbox_", "src_")]) {
      const listed = await api().conflicts(token, "sandbox", id);
      expect(listed).toEqual(await api().get(token, "sandbox", id));
      expect(listed.ok ? "found" : listed.status).toBe(api().notFound);
    }
  });

  it("intricate pairs: two combs measured exactly (by Clipper2); zig-zags across each other flagged unmeasured, with the smaller area", async () => {
    const { tokenA, tokenB } = await twoAccounts();
    const [x, y] = freshArea()(0, 0, 1, 1).coordinates[0][0];
    // 1,000 teeth running east-west: JTS's sweep along x took ~1 s over two of them (16,000 positions: 4.6 s).
    const combA: Comb = { x, y, teeth: 1_000, height: 0.1, length: 0.1, spine: 0.005 };
    const shift = 0.1 / 8_000;
    await api().createOne(tokenA, env, { alt_id: unique("comb-a"), geometry: combGeometry(combA) });
    const b = await api().createOne(tokenB, env, {
      alt_id: unique("comb-b"),
      geometry: combGeometry({ ...combA, y: y + shift }),
    });
    expect(b.conflict).toBe(true);
    const [combs] = await api().conflictList(tokenB, env, b.id);
    const exact = combIntersectionCells(combA, shift).reduce(
      (sum, [x1, y1, x2, y2]) => sum + rectangleAreaM2(box(x1, y1, x2, y2)),
      0,
    );
    expectClose(combs.overlap_area_m2, exact, 1e-9, "the combs' overlap");
    expect(combs.overlap_fraction).toBeLessThan(0.9);
    expect(combs.overlap_area_upper_bound, "measured: no upper-bound mark").toBeUndefined();

    // Over 400,000 pairs of their edges meet: not attempted, so flagged with the smaller area.
    const [u, v] = freshArea()(0, 0, 1, 1).coordinates[0][0];
    const tooIntricate = async () => {
      const text = await (await h.server.request("GET", "/metrics")).text();
      return Number(/^source_ledger_overlays_too_intricate_total (\d+)$/m.exec(text)?.[1]);
    };
    const before = await tooIntricate();
    const zigA = await api().createOne(tokenA, env, {
      alt_id: unique("zig-a"),
      geometry: zigzag(u, v, 0.1, 4_000, 0.2),
    });
    const across = await api().createOne(tokenB, env, {
      alt_id: unique("zig-b"),
      geometry: zigzag(u, v, 0.1, 4_000, 0.2, true),
    });
    expect(across.conflict).toBe(true);
    expect(await tooIntricate()).toBe(before + 1);
    const [zigzags] = await api().conflictList(tokenB, env, across.id);
    expect(Math.max(zigzags.overlap_fraction, zigzags.counterpart_overlap_fraction)).toBe(1);
    // They truly overlap in about half of each: the bound is not a measure, and says so.
    expect(Math.min(zigzags.overlap_fraction, zigzags.counterpart_overlap_fraction)).toBeGreaterThan(0.99);
    expect(zigzags.overlap_area_upper_bound).toBe(true);
    const setBy = (await api().events(tokenB, env, across.id)).find((e) => e.type === "conflict_set");
    expect(setBy && explanationOf(setBy), "the conflict_set event carries the same mark").toEqual(
      explanationOf(zigzags),
    );
    const [fromA] = await api().conflictList(tokenA, env, zigA.id);
    expect(fromA.overlap_area_upper_bound, "and so does the other side's explanation").toBe(true);
  });
});

describe("REST, gRPC and Connect answer the same", () => {
  it("conflicts and histories of one pair, normalised, are equal over the three protocols (refs included)", async () => {
    const { tokenA, tokenB } = await twoAccounts();
    const cell = freshArea();
    const rest = h.clients.rest;
    const a = await rest.createOne(tokenA, env, {
      alt_id: unique("alt-a"),
      geometry: cell(0, 0, 10, 10),
      attribute_type: ["CARBON_REMOVAL"],
    });
    const b = await rest.createOne(tokenB, env, {
      alt_id: unique("alt-b"),
      geometry: cell(3, 3, 13, 13),
      attribute_type: ["CARBON_REMOVAL"],
    });
    const c = await rest.createOne(tokenA, env, { alt_id: unique("alt-c"), geometry: cell(-3, -3, 3, 3) });
    expect([b.conflict, c.conflict]).toEqual([true, true]);
    expect((await rest.remove(tokenA, env, c.id)).ok).toBe(true);
    const withoutRecords = (events: HistoryEvent[]) => events.map(({ record: _record, ...rest }) => rest);
    for (const [token, id] of [
      [tokenA, a.id],
      [tokenB, b.id],
    ]) {
      const conflicts = await rest.conflictList(token, env, id);
      const events = withoutRecords(await rest.events(token, env, id));
      for (const protocol of ["grpc", "connect"] as const) {
        expect(await h.clients[protocol].conflictList(token, env, id), protocol).toEqual(conflicts);
        expect(withoutRecords(await h.clients[protocol].events(token, env, id)), protocol).toEqual(events);
      }
    }
  });
});

describe("concurrent creates and deletes keep pairs, flags and events in agreement", () => {
  it("12 overlapping sources from 3 accounts created at once: every pair once, on both sides; deletes at once clear them", async () => {
    const rest = h.clients.rest;
    const accounts = [unique("acct-c0"), unique("acct-c1"), unique("acct-c2")];
    const tokens = await Promise.all(accounts.map((a) => h.server.userToken(a)));
    const admin = await h.server.adminToken();
    const cell = freshArea();
    const n = 12;
    const created = await Promise.all(
      Array.from({ length: n }, (_, i) =>
        rest.createOne(tokens[i % 3], env, { alt_id: unique(`alt-${i}`), geometry: cell(i, 0, i + 20, 10) }),
      ),
    );
    const accountOf = new Map(created.map((s, i) => [s.id, accounts[i % 3]]));
    const tokenOf = new Map(created.map((s, i) => [s.id, tokens[i % 3]]));

    /** Checks every live source against the model: its pairs are the other live ones. */
    const check = async (live: string[], gone: string[]) => {
      const seen = new Map<string, ExplainedConflict>();
      for (const id of live) {
        const others = live.filter((other) => other !== id);
        const asAdmin = await rest.conflictList(admin, env, id);
        expect(asAdmin.map((c) => c.counterpart.id).sort(), id).toEqual([...others].sort());
        for (const c of asAdmin) {
          expect(c.counterpart.account_id).toBe(accountOf.get(c.counterpart.id!));
          seen.set(`${id} ${c.counterpart.id}`, c);
          const mirror = seen.get(`${c.counterpart.id} ${id}`);
          if (mirror) {
            expect(mirror.overlap_area_m2).toBe(c.overlap_area_m2);
            expect(mirror.overlap_fraction).toBe(c.counterpart_overlap_fraction);
            expect(mirror.detected_at).toBe(c.detected_at);
          }
        }
        // The owner's view: the same pairs, own account by id, others by ref.
        const asOwner = await rest.conflictList(tokenOf.get(id)!, env, id);
        expect(asOwner.map((c) => c.counterpart.id ?? c.counterpart.ref)).toHaveLength(others.length);
        expect(await rest.flag(tokenOf.get(id)!, env, id)).toBe(others.length > 0);
        const events = await rest.events(admin, env, id);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
        const setWith = events.filter((e) => e.type === "conflict_set").map((e) => e.counterpart!.id);
        const clearedWith = events.filter((e) => e.type === "conflict_cleared").map((e) => e.counterpart!.id);
        expect(new Set(setWith).size, "one conflict_set per pair").toBe(setWith.length);
        expect([...setWith].sort()).toEqual([...others, ...gone].sort());
        expect([...clearedWith].sort()).toEqual([...gone].sort());
      }
    };
    const ids = created.map((s) => s.id);
    await check(ids, []);
    const doomed = ids.filter((_, i) => i % 2 === 1);
    await Promise.all(doomed.map((id) => rest.remove(tokenOf.get(id)!, env, id)));
    const survivors = ids.filter((id) => !doomed.includes(id));
    await check(survivors, doomed);
    await Promise.all(survivors.slice(1).map((id) => rest.remove(tokenOf.get(id)!, env, id)));
    await check(survivors.slice(0, 1), ids.slice(1));
  });
});
