/**
 * Conflict bookkeeping of the embedded store (docs/api.md §8, §14): both sides flagged, batches,
 * accounts, stored pairs and the flag as "has at least one live pair" (a delete clears a
 * counterpart's flag with its last pair); the R*Tree-driven path against a brute-force scan of
 * every pair over a few thousand seeded random polygons, flags and pairs; and no write skew between
 * two OS processes writing the same file at the same moment.
 */
import { type ChildProcess, fork } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { intersectionAreaM2, polyclipEngine } from "../../src/geo/overlap.js";
import { shareOverlayAllowances } from "../../src/geo/overlay-allowances.js";
import type { MultiPolygonGeometry, PolygonGeometry, Position, SourceGeometry } from "../../src/geo/types.js";
import { checkGeometry } from "../../src/geo/validity.js";
import { conflictPolicy, sourcesConflict } from "../../src/ledger/conflict.js";
import type { NewSourceRecord, SourceRecord } from "../../src/model/records.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { change, listQuery, makeRecord, square } from "../contract/fixtures.js";
import { digitisedTwice, prng, ring } from "../support/geometry-fixtures.js";

const _Y2024 = Date.UTC(2024, 0, 1);
const Y2025 = Date.UTC(2025, 0, 1);
const Y2026 = Date.UTC(2026, 0, 1);

function cell(lon1: number, lat1: number, lon2: number, lat2: number): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(lon1, lat1, lon2, lat2)] };
}

function makeTempDir(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "source-ledger-conflict-"));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Every stored record of every account, by id. */
async function allRecords(store: SqliteSourceStore): Promise<Map<string, SourceRecord>> {
  const byId = new Map<string, SourceRecord>();
  for (let offset = 0; ; offset += 1000) {
    const page = await store.list(listQuery(null, { limit: 1000, offset }));
    for (const record of page) byId.set(record.id, record);
    if (page.length < 1000) return byId;
  }
}

async function flagOf(store: SqliteSourceStore, id: string): Promise<boolean | undefined> {
  return (await store.get(id, null))?.conflict;
}

/** The ids of a live source's counterparts, in the store's order (oldest pair first). */
async function pairsOf(store: SqliteSourceStore, id: string): Promise<string[] | undefined> {
  return (await store.conflictsOf(id, null))?.map((c) => c.counterpart.id);
}

/** A source's event types, each with the counterpart it names. */
async function eventsOf(store: SqliteSourceStore, id: string): Promise<string[] | undefined> {
  return (await store.history(id, null))?.map((e) => (e.counterpart ? `${e.type} ${e.counterpart.id}` : e.type));
}

describe("sqlite conflict bookkeeping", () => {
  let temp: { dir: string; remove(): void };
  let store: SqliteSourceStore;

  beforeEach(() => {
    temp = makeTempDir();
    store = openSqliteStore({ path: join(temp.dir, "ledger.sqlite"), conflictPolicy });
  });

  afterEach(async () => {
    await store.close();
    temp.remove();
  });

  it("flags both sides: the new source in the returned record, the stored one on the next read", async () => {
    const [a] = await store.insertMany([makeRecord({ geometry: cell(0, 0, 1, 1) })]);
    expect(a.conflict).toBe(false);
    const [b] = await store.insertMany([makeRecord({ geometry: cell(0.5, 0, 1.5, 1) })]);
    expect(b.conflict).toBe(true);
    expect(await flagOf(store, a.id)).toBe(true);
    expect(await flagOf(store, b.id)).toBe(true);
  });

  it("decides the flag itself, ignoring the one it is handed", async () => {
    const [lone] = await store.insertMany([makeRecord({ geometry: cell(20, 20, 21, 21), conflict: true })]);
    expect(lone.conflict).toBe(false);
    expect(await flagOf(store, lone.id)).toBe(false);
  });

  it("does not flag touching neighbours, slivers, other periods or other attribute types", async () => {
    const a = makeRecord({ geometry: cell(0, 0, 1, 1), attributeType: ["CARBON_REMOVAL"] });
    const others = [
      makeRecord({ geometry: cell(-1, 0, 0, 1) }), // shares an edge
      makeRecord({ geometry: cell(-1, 1, 0, 2) }), // shares a corner
      makeRecord({ geometry: cell(0.995, 0, 1.995, 1) }), // a 0.5% sliver
      makeRecord({ geometry: cell(0, 0, 1, 1), startAt: Y2025, endAt: Y2026 }), // starts when a ends
      makeRecord({ geometry: cell(0, 0, 1, 1), attributeType: ["BIODIVERSITY", "CI_SCORE"] }),
    ];
    const returned = await store.insertMany([a, ...others]);
    expect(returned.map((r) => r.conflict)).toEqual([false, false, false, false, false, false]);
    for (const record of returned) expect(await flagOf(store, record.id)).toBe(false);
  });

  it("does not flag neighbours whose twice-digitised shared boundary defeats the first overlay engine", async () => {
    const random = prng(2048);
    const pairs: [PolygonGeometry, PolygonGeometry][] = [];
    for (let n = 0; n < 400 && pairs.length < 3; n++) {
      const pair = digitisedTwice(-100 + (n % 20) * 0.01, -40 + Math.floor(n / 20) * 0.01, 0.001, random);
      try {
        polyclipEngine.intersection([pair[0].coordinates], [pair[1].coordinates]);
      } catch {
        pairs.push(pair);
      }
    }
    expect(pairs).toHaveLength(3);
    for (const [west, east] of pairs) {
      const [a] = await store.insertMany([makeRecord({ accountId: "acct_a", geometry: west })]);
      const [b] = await store.insertMany([makeRecord({ accountId: "acct_b", geometry: east })]);
      expect(b.conflict).toBe(false);
      expect(await flagOf(store, a.id)).toBe(false);
      await store.deleteById(a.id, null, change());
      await store.deleteById(b.id, null, change());
      // And the other way round, in one batch.
      const both = await store.insertMany([makeRecord({ geometry: east }), makeRecord({ geometry: west })]);
      expect(both.map((r) => r.conflict)).toEqual([false, false]);
      for (const record of both) await store.deleteById(record.id, null, change());
    }
  });

  it("lets batch members flag each other, and the returned records show it", async () => {
    const returned = await store.insertMany([
      makeRecord({ geometry: cell(0, 0, 1, 1) }), // overlaps the third
      makeRecord({ geometry: cell(5, 5, 6, 6) }), // alone
      makeRecord({ geometry: cell(0.5, 0.5, 1.5, 1.5) }), // overlaps the first
      makeRecord({ geometry: cell(5, 6, 6, 7) }), // touches the second only
    ]);
    expect(returned.map((r) => r.conflict)).toEqual([true, false, true, false]);
    for (const record of returned) expect(await flagOf(store, record.id)).toBe(record.conflict);
  });

  it("lets a batch member flag an earlier stored source and a later member in the same batch", async () => {
    const [stored] = await store.insertMany([makeRecord({ geometry: cell(0, 0, 1, 1) })]);
    const returned = await store.insertMany([
      makeRecord({ geometry: cell(3, 3, 4, 4) }), // overlapped by the third member
      makeRecord({ geometry: cell(0.2, 0.2, 0.8, 0.8) }), // inside the stored source
      makeRecord({ geometry: cell(3.5, 3.5, 4.5, 4.5) }),
    ]);
    expect(returned.map((r) => r.conflict)).toEqual([true, true, true]);
    expect(await flagOf(store, stored.id)).toBe(true);
  });

  it("keeps A flagged while it has a pair left: A overlapping B and C stays flagged until both are gone", async () => {
    const [a, b, c, far] = await store.insertMany([
      makeRecord({ geometry: cell(0, 0, 2, 1) }),
      makeRecord({ geometry: cell(-0.5, 0, 0.5, 1) }), // overlaps A's west half...
      makeRecord({ geometry: cell(1.5, 0, 2.5, 1) }), // ...and C its east half; B and C are apart
      makeRecord({ geometry: cell(10, 10, 11, 11) }),
    ]);
    expect([a, b, c, far].map((r) => r.conflict)).toEqual([true, true, true, false]);
    expect(await pairsOf(store, a.id)).toEqual([b.id, c.id]);

    expect(await store.deleteById(b.id, null, change())).toBe(true);
    expect(await flagOf(store, a.id)).toBe(true); // its pair with C is left
    expect(await pairsOf(store, a.id)).toEqual([c.id]);
    expect(await flagOf(store, c.id)).toBe(true);

    expect(await store.deleteByAltId(c.altId, c.accountId, change())).toBe(true);
    expect(await flagOf(store, a.id)).toBe(false);
    expect(await pairsOf(store, a.id)).toEqual([]);
    expect(await flagOf(store, far.id)).toBe(false);
    expect(await eventsOf(store, a.id)).toEqual([
      "created",
      `conflict_set ${b.id}`,
      `conflict_set ${c.id}`,
      `conflict_cleared ${b.id}`,
      `conflict_cleared ${c.id}`,
    ]);
    expect(await eventsOf(store, far.id)).toEqual(["created"]);
  });

  it("clears every counterpart of a deleted source that lost its last pair, and only those", async () => {
    // Hub H overlaps X, Y and Z; X also overlaps W. Deleting H clears Y and Z but not X (its pair
    // with W is left); each of X, Y and Z gets a conflict_cleared naming H.
    const [h, x, y, z, w] = await store.insertMany([
      makeRecord({ geometry: cell(0, 0, 3, 1) }),
      makeRecord({ geometry: cell(0, 0.5, 1, 2) }),
      makeRecord({ geometry: cell(1.2, 0.5, 1.8, 1.5) }),
      makeRecord({ geometry: cell(2, -1, 3, 0.5) }),
      makeRecord({ geometry: cell(0.2, 1.5, 0.8, 3) }),
    ]);
    expect([h, x, y, z, w].map((r) => r.conflict)).toEqual([true, true, true, true, true]);
    await store.deleteById(h.id, null, change());
    expect(await flagOf(store, x.id)).toBe(true);
    expect(await flagOf(store, w.id)).toBe(true);
    expect(await flagOf(store, y.id)).toBe(false);
    expect(await flagOf(store, z.id)).toBe(false);
    expect(await pairsOf(store, x.id)).toEqual([w.id]);
    expect(await pairsOf(store, w.id)).toEqual([x.id]);
    for (const { id } of [y, z]) expect(await pairsOf(store, id)).toEqual([]);
    for (const { id } of [x, y, z]) expect((await eventsOf(store, id))?.at(-1)).toBe(`conflict_cleared ${h.id}`);
    expect(await eventsOf(store, w.id)).toEqual(["created", `conflict_set ${x.id}`]);
  });

  it("leaves a neighbour flagged for another reason alone when a non-conflicting source nearby is deleted", async () => {
    const [a, b, touching] = await store.insertMany([
      makeRecord({ geometry: cell(0, 0, 1, 1) }),
      makeRecord({ geometry: cell(0, 0.5, 1, 1.5) }),
      makeRecord({ geometry: cell(1, 0, 2, 1) }), // touches A: box candidate, no conflict
    ]);
    expect([a.conflict, b.conflict, touching.conflict]).toEqual([true, true, false]);
    await store.deleteById(touching.id, null, change());
    expect(await flagOf(store, a.id)).toBe(true);
    expect(await flagOf(store, b.id)).toBe(true);
    // No pair with the deleted source, so nothing was cleared.
    expect(await eventsOf(store, a.id)).toEqual(["created", `conflict_set ${b.id}`]);
    expect(await eventsOf(store, b.id)).toEqual(["created", `conflict_set ${a.id}`]);
  });

  it("finds conflicts across accounts, and each account reads only its own source's flag", async () => {
    const [a] = await store.insertMany([makeRecord({ accountId: "acct_a", geometry: cell(0, 0, 1, 1) })]);
    const [b] = await store.insertMany([makeRecord({ accountId: "acct_b", geometry: cell(0.5, 0, 1.5, 1) })]);
    expect(b.conflict).toBe(true);
    expect((await store.get(a.id, "acct_a"))?.conflict).toBe(true);
    expect(await store.get(b.id, "acct_a")).toBeNull();
    expect(await store.deleteById(b.id, "acct_a", change())).toBe(false);
    expect(await store.deleteById(b.id, "acct_b", change())).toBe(true);
    expect((await store.get(a.id, "acct_a"))?.conflict).toBe(false);
  });

  it("frees the flag when the conflicting source is replaced by a non-overlapping one with the same alt_id", async () => {
    const [a] = await store.insertMany([makeRecord({ geometry: cell(0, 0, 1, 1) })]);
    const b = makeRecord({ accountId: "acct_b", altId: "field-7", geometry: cell(0.5, 0, 1.5, 1) });
    await store.insertMany([b]);
    await store.deleteByAltId("field-7", "acct_b", change());
    const [again] = await store.insertMany([
      makeRecord({ accountId: "acct_b", altId: "field-7", geometry: cell(1, 0, 2, 1) }),
    ]);
    expect(again.conflict).toBe(false);
    expect(await flagOf(store, a.id)).toBe(false);
  });

  it("measures every field of a batch along a stored 99,000-position jurisdiction, none flagged for want of allowance", async () => {
    // The jurisdiction is read once and parsed once for the whole batch (not once per field), so
    // its boundary is indexed from the second field on and each field reads a few hundred of its
    // positions; read whole per field, the request's allowance ran out after ~400 fields and
    // flagged the rest with their whole areas.
    const radiusAt = (angle: number) => 1 + 0.2 * Math.sin(angle * 40);
    const shell: Position[] = [];
    for (let i = 0; i < 99_000; i++) {
      const angle = (2 * Math.PI * i) / 99_000;
      shell.push([10 + radiusAt(angle) * Math.cos(angle), 10 + radiusAt(angle) * Math.sin(angle)]);
    }
    shell.push(shell[0]);
    const jurisdictionGeometry: PolygonGeometry = { type: "Polygon", coordinates: [shell] };
    const [jurisdiction] = await store.insertMany([
      makeRecord({ accountId: "acct_b", geometry: jurisdictionGeometry }),
    ]);
    const fields = Array.from({ length: 600 }, (_, i) => {
      const angle = (2 * Math.PI * (i + 0.37)) / 600;
      const [x, y] = [10 + radiusAt(angle) * Math.cos(angle), 10 + radiusAt(angle) * Math.sin(angle)];
      return makeRecord({ geometry: cell(x - 0.005, y - 0.005, x + 0.005, y + 0.005) });
    });
    shareOverlayAllowances(fields.map((f) => f.geometry));
    const created = await store.insertMany(fields);
    expect(created.every((record) => record.conflict)).toBe(true);
    let partial = 0;
    for (const [i, record] of created.entries()) {
      const [pair] = (await store.conflictsOf(record.id, null)) ?? [];
      expect(pair.counterpart.id).toBe(jurisdiction.id);
      if (pair.measure.overlapFraction < 0.99) partial++;
      if (i % 60 === 0) {
        const exact = intersectionAreaM2(structuredClone(jurisdictionGeometry), record.geometry);
        expect(pair.measure.overlapAreaM2).toBeCloseTo(exact, 3);
      }
    }
    expect(partial).toBeGreaterThan(550);
  });

  it("reads a large stored geometry again when an operator changed its text by hand", async () => {
    const circle = (radius: number, vertices: number): PolygonGeometry => {
      const shell: Position[] = [];
      for (let i = 0; i < vertices; i++) {
        const angle = (2 * Math.PI * i) / vertices;
        shell.push([20 + radius * Math.cos(angle), 20 + radius * Math.sin(angle)]);
      }
      shell.push(shell[0]);
      return { type: "Polygon", coordinates: [shell] };
    };
    // Over 32 KB of JSON each: read through the cache of parsed geometries.
    const [large] = await store.insertMany([makeRecord({ accountId: "acct_b", geometry: circle(1, 2_000) })]);
    const [inside] = await store.insertMany([makeRecord({ geometry: cell(20.7, 19.95, 20.8, 20.05) })]);
    expect(inside.conflict).toBe(true);
    // By hand, not through the API: a smaller circle, which leaves that ring of land outside.
    const hand = new Database(join(temp.dir, "ledger.sqlite"));
    hand.prepare("UPDATE sources SET geometry = ? WHERE id = ?").run(JSON.stringify(circle(0.5, 2_001)), large.id);
    hand.close();
    const [again] = await store.insertMany([makeRecord({ geometry: cell(19.2, 19.95, 19.3, 20.05) })]);
    expect(again.conflict).toBe(false);
  });

  it("reads a large stored geometry's text when its kept wire bytes are damaged", async () => {
    const shell: Position[] = [];
    for (let i = 0; i < 2_000; i++) {
      const angle = (2 * Math.PI * i) / 2_000;
      shell.push([20 + Math.cos(angle), 20 + Math.sin(angle)]);
    }
    shell.push(shell[0]);
    const [large] = await store.insertMany([
      makeRecord({ accountId: "acct_b", geometry: { type: "Polygon", coordinates: [shell] } }),
    ]);
    const hand = new Database(join(temp.dir, "ledger.sqlite"));
    hand
      .prepare("UPDATE source_geometry_wire SET wire = x'0a05' WHERE seq = (SELECT seq FROM sources WHERE id = ?)")
      .run(large.id);
    hand.close();
    const [inside] = await store.insertMany([makeRecord({ geometry: cell(20.7, 19.95, 20.8, 20.05) })]);
    expect(inside.conflict).toBe(true);
    expect((await store.conflictsOf(inside.id, null))?.map((c) => c.counterpart.id)).toEqual([large.id]);
  });
});

// --- property test: the indexed path against brute force ---

const ATTRIBUTE_TYPES = ["CARBON_REMOVAL", "BIODIVERSITY", "CI_SCORE", "WATER_QUALITY"];
const ACCOUNTS = ["acct_a", "acct_b", "acct_c"];

interface Rect {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/**
 * Random sources in a 2° × 2° window near 45° N: rectangles (some snapped to a 0.005° grid so
 * edges coincide), rectangles placed against an earlier one with overlaps around the 1% threshold
 * (0, 0.3%, 0.9%, 1.1%, 3% of its width), star-shaped polygons and two-part MultiPolygons; random
 * year-aligned periods (so end == start happens often) and random attribute types.
 */
function randomSources(seed: number, count: number): NewSourceRecord[] {
  const random = prng(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const rects: Rect[] = [];
  const records: NewSourceRecord[] = [];
  const X0 = 20;
  const Y0 = 44;
  const SPAN = 2;

  const rectangle = (): Rect => {
    const w = 0.01 + random() * 0.06;
    const h = 0.01 + random() * 0.06;
    let minX = X0 + random() * (SPAN - w);
    let minY = Y0 + random() * (SPAN - h);
    if (random() < 0.3) {
      const snap = (v: number) => Math.round(v / 0.005) * 0.005;
      minX = snap(minX);
      minY = snap(minY);
      return { minX, minY, maxX: snap(minX + w), maxY: snap(minY + h) };
    }
    return { minX, minY, maxX: minX + w, maxY: minY + h };
  };

  const besideEarlier = (): Rect | null => {
    if (rects.length === 0) return null;
    const other = pick(rects);
    const width = other.maxX - other.minX;
    const fraction = pick([0, 0.003, 0.009, 0.011, 0.03]);
    const minX = other.maxX - fraction * width;
    return { minX, minY: other.minY, maxX: minX + width, maxY: other.maxY };
  };

  const star = (): SourceGeometry => {
    const r = 0.005 + random() * 0.03;
    const cx = X0 + r + random() * (SPAN - 2 * r);
    const cy = Y0 + r + random() * (SPAN - 2 * r);
    const vertices = 5 + Math.floor(random() * 10);
    const ring: Position[] = [];
    for (let i = 0; i < vertices; i++) {
      const angle = ((i + 0.2 + 0.6 * random()) / vertices) * 2 * Math.PI;
      const radius = r * (0.4 + 0.6 * random());
      ring.push([cx + radius * Math.cos(angle), cy + radius * Math.sin(angle)]);
    }
    ring.push(ring[0]);
    return { type: "Polygon", coordinates: [ring] };
  };

  const twoParts = (): MultiPolygonGeometry => {
    const first = rectangle();
    const w = first.maxX - first.minX;
    const gap = 0.005 + random() * 0.05;
    const x = Math.min(first.maxX + gap, X0 + SPAN - w);
    const second =
      x > first.maxX
        ? { minX: x, maxX: x + w, minY: first.minY, maxY: first.maxY }
        : { ...first, minX: first.minX - w - gap, maxX: first.minX - gap };
    return {
      type: "MultiPolygon",
      coordinates: [
        [ring(first.minX, first.minY, first.maxX, first.maxY)],
        [ring(second.minX, second.minY, second.maxX, second.maxY)],
      ],
    };
  };

  for (let i = 0; i < count; i++) {
    const kind = random();
    let geometry: SourceGeometry;
    if (kind < 0.15) {
      geometry = star();
    } else if (kind < 0.2) {
      geometry = twoParts();
    } else {
      const rect = (kind < 0.35 ? besideEarlier() : null) ?? rectangle();
      rects.push(rect);
      geometry = cell(rect.minX, rect.minY, rect.maxX, rect.maxY);
    }
    const startYear = 2020 + Math.floor(random() * 6);
    const startAt = random() < 0.8 ? Date.UTC(startYear, 0, 1) : Date.UTC(startYear, Math.floor(random() * 12), 1);
    const endAt = Date.UTC(startYear + 1 + Math.floor(random() * 3), 0, 1);
    const attributeType = random() < 0.3 ? [] : ATTRIBUTE_TYPES.filter(() => random() < 0.35);
    records.push(makeRecord({ accountId: pick(ACCOUNTS), geometry, startAt, endAt, attributeType }));
  }
  return records;
}

/** A pair as a string, its two ids in code-unit order. */
const pairKey = (x: string, y: string) => (x < y ? `${x}|${y}` : `${y}|${x}`);

/**
 * The flag of every record and every conflicting pair by testing every pair, with no index. Also
 * checks the decision is symmetric.
 */
function bruteForceFlags(records: readonly NewSourceRecord[]): {
  flags: Map<string, boolean>;
  pairs: Set<string>;
  asymmetric: string[];
} {
  const flags = new Map(records.map((r) => [r.id, false]));
  const asymmetric: string[] = [];
  const pairs = new Set<string>();
  for (let j = 0; j < records.length; j++) {
    for (let i = 0; i < j; i++) {
      // The later source against the earlier one, as the store asks when inserting.
      const conflict = sourcesConflict(records[j], records[i]);
      if (conflict !== sourcesConflict(records[i], records[j])) asymmetric.push(`${records[i].id}/${records[j].id}`);
      if (conflict) {
        pairs.add(pairKey(records[i].id, records[j].id));
        flags.set(records[i].id, true);
        flags.set(records[j].id, true);
      }
    }
  }
  return { flags, pairs, asymmetric };
}

/** Every pair the store keeps, read from each live source's side (each pair must be seen from both). */
async function storedPairs(
  store: SqliteSourceStore,
  ids: Iterable<string>,
): Promise<{ pairs: Set<string>; oneSided: string[] }> {
  const seen = new Map<string, number>();
  for (const id of ids) {
    for (const other of (await pairsOf(store, id)) ?? []) {
      const key = pairKey(id, other);
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  }
  return { pairs: new Set(seen.keys()), oneSided: [...seen].filter(([, n]) => n !== 2).map(([key]) => key) };
}

/** The pairs in one set and not in the other. */
function pairDifferences(expected: Set<string>, actual: Set<string>): string[] {
  return [
    ...[...expected].filter((key) => !actual.has(key)).map((key) => `missing ${key}`),
    ...[...actual].filter((key) => !expected.has(key)).map((key) => `extra ${key}`),
  ];
}

function mismatches(expected: Map<string, boolean>, stored: Map<string, SourceRecord>): string[] {
  const wrong: string[] = [];
  for (const [id, flag] of expected) {
    const record = stored.get(id);
    if (record === undefined) wrong.push(`${id}: missing`);
    else if (record.conflict !== flag) wrong.push(`${id}: stored ${record.conflict}, brute force ${flag}`);
  }
  if (stored.size !== expected.size) wrong.push(`stored ${stored.size} records, expected ${expected.size}`);
  return wrong;
}

describe("indexed conflict detection agrees with a brute-force scan", () => {
  it("over 2,500 seeded random sources inserted in batches, after deleting a third, and after more inserts", async () => {
    const temp = makeTempDir();
    const store = openSqliteStore({ path: join(temp.dir, "ledger.sqlite"), conflictPolicy });
    try {
      const random = prng(20240601);
      const records = randomSources(424242, 2500);
      for (const record of records.slice(0, 50)) expect(checkGeometry(record.geometry)).toEqual([]);

      // Insert in random batch sizes; what a batch returns must equal what the store then holds.
      for (let at = 0; at < records.length - 300; ) {
        const size = 1 + Math.floor(random() * 150);
        const batch = records.slice(at, Math.min(at + size, records.length - 300));
        at += batch.length;
        const returned = await store.insertMany(batch);
        expect(returned.map((r) => r.id)).toEqual(batch.map((r) => r.id));
        for (const record of returned) expect(await flagOf(store, record.id), record.id).toBe(record.conflict);
      }
      let live = records.slice(0, records.length - 300);
      const first = bruteForceFlags(live);
      expect(first.asymmetric).toEqual([]);
      // The data must exercise both answers well.
      const flagged = [...first.flags.values()].filter(Boolean).length;
      expect(flagged).toBeGreaterThan(live.length * 0.2);
      expect(flagged).toBeLessThan(live.length * 0.8);
      expect(mismatches(first.flags, await allRecords(store))).toEqual([]);
      const firstStored = await storedPairs(store, first.flags.keys());
      expect(firstStored.oneSided).toEqual([]);
      expect(pairDifferences(first.pairs, firstStored.pairs)).toEqual([]);

      // Delete a random third, some by id (any account), some by alt_id in their account.
      const doomed = new Set<string>();
      for (const record of live) if (random() < 1 / 3) doomed.add(record.id);
      for (const record of live) {
        if (!doomed.has(record.id)) continue;
        const deleted =
          random() < 0.5
            ? await store.deleteById(record.id, null, change())
            : await store.deleteByAltId(record.altId, record.accountId, change());
        expect(deleted).toBe(true);
      }
      live = live.filter((r) => !doomed.has(r.id));
      const second = bruteForceFlags(live);
      const cleared = [...first.flags].filter(([id, flag]) => flag && second.flags.get(id) === false).length;
      expect(cleared).toBeGreaterThan(20); // deletes really had neighbours to re-evaluate
      expect(mismatches(second.flags, await allRecords(store))).toEqual([]);
      const secondStored = await storedPairs(store, second.flags.keys());
      expect(secondStored.oneSided).toEqual([]);
      expect(pairDifferences(second.pairs, secondStored.pairs)).toEqual([]);

      // And inserts after deletes.
      const rest = records.slice(records.length - 300);
      for (let at = 0; at < rest.length; at += 100) await store.insertMany(rest.slice(at, at + 100));
      live = [...live, ...rest];
      const third = bruteForceFlags(live);
      expect(mismatches(third.flags, await allRecords(store))).toEqual([]);
      const thirdStored = await storedPairs(store, third.flags.keys());
      expect(thirdStored.oneSided).toEqual([]);
      expect(pairDifferences(third.pairs, thirdStored.pairs)).toEqual([]);
    } finally {
      await store.close();
      temp.remove();
    }
  });
});

// --- real concurrency: two processes writing one file ---

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
const STORE_MODULE = new URL("../../src/store/sqlite/index.ts", import.meta.url).href;
const POLICY_MODULE = new URL("../../src/ledger/conflict.ts", import.meta.url).href;

/**
 * The writer process: opens the store file itself, then on each command spins until the shared
 * wall-clock instant `at`, runs the insert or deletes, and reports its result and timing.
 */
const WRITER_SCRIPT = `
import { performance } from "node:perf_hooks";
const { openSqliteStore } = await import(process.env.LEDGER_STORE_MODULE);
const { conflictPolicy } = await import(process.env.LEDGER_POLICY_MODULE);
const store = openSqliteStore({ path: process.env.LEDGER_DB, conflictPolicy, busyTimeoutMs: 20000 });
const clock = () => performance.timeOrigin + performance.now();
process.on("message", async (msg) => {
  if (msg.op === "close") {
    await store.close();
    process.disconnect();
    return;
  }
  while (clock() < msg.at) {}
  const start = clock();
  try {
    let result;
    if (msg.op === "insert") result = await store.insertMany(msg.records);
    else {
      result = [];
      for (const id of msg.ids) result.push(await store.deleteById(id, null, { by: "writer", at: Date.now() }));
    }
    process.send({ ok: true, start, end: clock(), result });
  } catch (error) {
    process.send({ ok: false, error: String(error && error.stack || error) });
  }
});
process.send({ ready: true });
`;

interface WriterReply {
  ok: boolean;
  start: number;
  end: number;
  result: unknown;
  error?: string;
}

class Writer {
  private readonly child: ChildProcess;
  private pending: ((reply: any) => void)[] = [];
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;

  constructor(script: string, dbPath: string) {
    this.child = fork(script, [], {
      cwd: REPO_ROOT,
      execArgv: ["--import", "tsx"],
      env: {
        ...process.env,
        LEDGER_DB: dbPath,
        LEDGER_STORE_MODULE: STORE_MODULE,
        LEDGER_POLICY_MODULE: POLICY_MODULE,
      },
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.exited = new Promise((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.ready = new Promise((resolve, reject) => {
      this.child.once("message", () => resolve());
      this.child.once("exit", (code) => reject(new Error(`writer exited with ${code} before it was ready`)));
    });
    this.child.on("message", (reply: any) => {
      if (reply.ready) return;
      this.pending.shift()?.(reply);
    });
  }

  send(command: object): Promise<WriterReply> {
    return new Promise((resolve) => {
      this.pending.push(resolve);
      this.child.send(command);
    });
  }

  async close(): Promise<void> {
    if (this.child.connected) this.child.send({ op: "close" });
    const timer = setTimeout(() => this.child.kill(), 5_000);
    await this.exited;
    clearTimeout(timer);
  }
}

describe("no write skew between two processes", () => {
  it("two processes creating overlapping sources at the same instant both end flagged; concurrent deletes clear the third", async () => {
    const temp = makeTempDir();
    const dbPath = join(temp.dir, "shared.sqlite");
    const script = join(temp.dir, "writer.mjs");
    writeFileSync(script, WRITER_SCRIPT);
    // Both open (and migrate) the fresh file at the same time.
    const writers = [new Writer(script, dbPath), new Writer(script, dbPath)];
    let parent: SqliteSourceStore | undefined;
    try {
      await Promise.all(writers.map((w) => w.ready));
      const ROUNDS = 50;
      const mine: [string[], string[]] = [[], []];
      let raced = 0;

      // Round r: writer 0 creates A_r and writer 1 creates B_r (different accounts), overlapping
      // by half and nothing else. Odd rounds add non-overlapping extras to make the batches longer.
      for (let round = 0; round < ROUNDS; round++) {
        const lon = -60 + round * 0.1;
        const batches = [0, 1].map((w) => {
          const main = makeRecord({ accountId: `acct_w${w}`, geometry: square(lon + w * 0.005, 10, 0.01) });
          const extras =
            round % 2 === 1
              ? [0, 1, 2].map((k) =>
                  makeRecord({ accountId: `acct_w${w}`, geometry: square(lon, 20 + w + k * 0.1, 0.01) }),
                )
              : [];
          return [main, ...extras];
        });
        const at = Date.now() + 5;
        const replies = await Promise.all(writers.map((w, k) => w.send({ op: "insert", records: batches[k], at })));
        for (const [k, reply] of replies.entries()) {
          expect(reply.error).toBeUndefined();
          const returned = reply.result as SourceRecord[];
          mine[k].push(returned[0].id);
          for (const extra of returned.slice(1)) expect(extra.conflict).toBe(false);
        }
        if (replies[0].start < replies[1].end && replies[1].start < replies[0].end) raced += 1;
        // Whoever committed second saw the other: its returned record is flagged.
        expect(
          (replies[0].result as SourceRecord[])[0].conflict || (replies[1].result as SourceRecord[])[0].conflict,
        ).toBe(true);
      }
      // The two calls really ran at the same time (one waiting for the other's write lock).
      expect(raced).toBeGreaterThan(0);

      parent = openSqliteStore({ path: dbPath, conflictPolicy });
      for (let round = 0; round < ROUNDS; round++) {
        expect(await flagOf(parent, mine[0][round]), `round ${round}, writer 0`).toBe(true);
        expect(await flagOf(parent, mine[1][round]), `round ${round}, writer 1`).toBe(true);
      }
      const everything = await allRecords(parent);
      expect(everything.size).toBe(ROUNDS * 2 + Math.floor(ROUNDS / 2) * 6);

      // C_r overlaps A_r and B_r. Deleting A_r and B_r at the same instant in the two processes
      // must leave C_r unflagged: each delete must see the other's.
      const thirds: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const [c] = await parent.insertMany([
          makeRecord({ accountId: "acct_c", geometry: square(-60 + round * 0.1 + 0.0025, 10, 0.01) }),
        ]);
        expect(c.conflict).toBe(true);
        thirds.push(c.id);
      }
      let racedDeletes = 0;
      for (let round = 0; round < ROUNDS; round++) {
        const at = Date.now() + 5;
        const replies = await Promise.all(writers.map((w, k) => w.send({ op: "delete", ids: [mine[k][round]], at })));
        for (const reply of replies) expect(reply.result).toEqual([true]);
        if (replies[0].start < replies[1].end && replies[1].start < replies[0].end) racedDeletes += 1;
      }
      expect(racedDeletes).toBeGreaterThan(0);
      for (const [round, id] of thirds.entries()) {
        expect(await flagOf(parent, id), `round ${round}`).toBe(false);
        expect(await pairsOf(parent, id), `round ${round}`).toEqual([]);
        // One conflict_cleared for each of its two pairs, whichever delete committed first.
        expect(((await eventsOf(parent, id)) ?? []).slice(3).sort(), `round ${round}`).toEqual(
          [`conflict_cleared ${mine[0][round]}`, `conflict_cleared ${mine[1][round]}`].sort(),
        );
      }
      console.info(
        `write-skew test: ${raced}/${ROUNDS} insert rounds and ${racedDeletes}/${ROUNDS} delete rounds overlapped in time`,
      );
    } finally {
      await Promise.all(writers.map((w) => w.close()));
      await parent?.close();
      temp.remove();
    }
  });
});
