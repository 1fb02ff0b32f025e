/**
 * The listing part of the SourceStore contract (port.ts `list`): keyset pages (`after`), the
 * conflict, active_at and alt_id filters, exact `bbox` and `intersects` (touching counts, a
 * bounding box is not the geometry, holes are not the source), limit and offset counting exact
 * matches, account scoping of spatial queries, and a seeded brute-force model held to JSTS.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type {
  BoundingBox,
  MultiPolygonGeometry,
  PolygonCoordinates,
  PolygonGeometry,
  Position,
  SearchArea,
} from "../../src/geo/types.js";
import { ExactTestAllowance, POSITIONS_PER_TEST } from "../../src/model/exact-tests.js";
import type { ListCursor, ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import type { SourceStore } from "../../src/store/port.js";
import { prng, ring } from "../support/geometry-fixtures.js";
import { BASE_TIME, change, ids, inCreationOrder, listQuery, makeRecord, square, stored } from "./fixtures.js";
import { describeCase, searchModel } from "./search-model.js";

const A = "acct_a";
const B = "acct_b";
/** 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z, the range of times (Date.UTC maps year 1 to 1901). */
const YEAR_1 = Date.parse("0001-01-01T00:00:00Z");
const LAST_MS = Date.parse("9999-12-31T23:59:59.999Z");

const cursorOf = (record: { createdAt: number; id: string }): ListCursor => ({
  createdAt: record.createdAt,
  id: record.id,
});

const polygon = (...rings: Position[][]): PolygonGeometry => ({ type: "Polygon", coordinates: rings });
const multiPolygon = (...parts: PolygonCoordinates[]): MultiPolygonGeometry => ({
  type: "MultiPolygon",
  coordinates: parts,
});
const bbox = (minX: number, minY: number, maxX: number, maxY: number): BoundingBox => ({ minX, minY, maxX, maxY });
const boxArea = (minX: number, minY: number, maxX: number, maxY: number): SearchArea => ({
  type: "Box",
  box: bbox(minX, minY, maxX, maxY),
});
const point = (x: number, y: number): SearchArea => ({ type: "Point", coordinates: [x, y] });

/** List order: createdAt, then id (the fixtures' ids are ASCII). */
function inListOrder<T extends { createdAt: number; id: string }>(records: readonly T[]): T[] {
  return [...records].sort((a, b) =>
    a.createdAt !== b.createdAt ? a.createdAt - b.createdAt : a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
  );
}

/** Fisher–Yates with a seeded generator: insertion order is not list order. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  const random = prng(seed);
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

/** Inserts in batches of `size`, in the order given. */
async function insertInBatches(store: SourceStore, records: readonly NewSourceRecord[], size = 500): Promise<void> {
  for (let at = 0; at < records.length; at += size) await store.insertMany(records.slice(at, at + size));
}

/**
 * Every page of a listing, walked with `after` from each page's last record until a short page:
 * the pages, each checked to hold at most `pageSize` records.
 */
async function walk(store: SourceStore, query: ListQuery, pageSize: number, bound = 10_000): Promise<string[][]> {
  const pages: string[][] = [];
  let after: ListCursor | undefined;
  for (;;) {
    const page = await store.list({ ...query, limit: pageSize, offset: 0, after });
    expect(page.length).toBeLessThanOrEqual(pageSize);
    pages.push(ids(page));
    if (page.length < pageSize) return pages;
    after = cursorOf(page[page.length - 1]);
    // A store that ignored `after` would loop for ever.
    if (pages.length > bound) throw new Error(`walk did not end after ${bound} pages: after is not applied`);
  }
}

// The area [49, 50]²; decoys meet its envelope with their bounding boxes only.
export const DECOY_AREA = boxArea(49, 49, 50, 50);
const decoyTriangle = () =>
  polygon([
    [46, 46],
    [49.5, 46],
    [46, 49.5],
    [46, 46],
  ]);
const decoyEll = () =>
  polygon([
    [48.5, 48.5],
    [50.5, 48.5],
    [50.5, 48.75],
    [48.75, 48.75],
    [48.75, 50.5],
    [48.5, 50.5],
    [48.5, 48.5],
  ]);
/** The decoys and matches have 4, 7 or 5 positions: an allowance of this many lasts two or three tests. */
export const DECOY_TESTS_ALLOWANCE = 2 * POSITIONS_PER_TEST + 16;

/** 60 records of acct_a: every twelfth (5 in all) meets DECOY_AREA, the others are decoys; and the matches' ids. */
export function decoysAndMatches(altIdPrefix: string): { records: NewSourceRecord[]; matches: string[] } {
  const records = Array.from({ length: 60 }, (_, i) =>
    makeRecord({
      accountId: A,
      altId: `${altIdPrefix}-${i}`,
      geometry: i % 12 === 11 ? square(49.5, 49.5, 1) : i % 2 === 0 ? decoyTriangle() : decoyEll(),
    }),
  );
  const matches = ids(records.filter((_, i) => i % 12 === 11));
  expect(matches).toHaveLength(5);
  return { records, matches };
}

/**
 * Walks `query` in pages of `limit` (2 unless given), each with an exact tests' allowance of
 * `positions` (ListQuery.exactTests), resuming a page that stopped early where it stopped (with the
 * offset's matches still to skip), else after its last record: the ids seen, the pages that
 * stopped, those of them that were empty, and those that carried a skip.
 */
export async function walkStopping(
  store: SourceStore,
  query: ListQuery,
  positions: number,
  limit = 2,
): Promise<{ seen: string[]; stops: number; emptyStops: number; skipsCarried: number }> {
  const seen: string[] = [];
  let after: ListCursor | undefined;
  let skip = query.offset;
  let stops = 0;
  let emptyStops = 0;
  let skipsCarried = 0;
  for (let pages = 0; ; pages++) {
    if (pages > 1_000) throw new Error("the walk did not end: a stopped page's cursor is not applied");
    const exactTests = new ExactTestAllowance(positions);
    const page = await store.list({ ...query, limit, offset: skip, after, exactTests });
    expect(page.length).toBeLessThanOrEqual(limit);
    seen.push(...ids(page));
    const stoppedAt = exactTests.stoppedAt;
    const last = page.at(-1);
    if (stoppedAt !== undefined) {
      // Where it stopped is the candidate last tested: at or past the page's last record.
      if (last !== undefined) expect(inListOrder([last, stoppedAt])[0]).toBe(last);
      else emptyStops += 1;
      stops += 1;
      if (stoppedAt.skip > 0) skipsCarried += 1;
      after = { createdAt: stoppedAt.createdAt, id: stoppedAt.id };
      skip = stoppedAt.skip;
    } else if (page.length === limit && last !== undefined) {
      after = cursorOf(last);
      skip = 0;
    } else return { seen, stops, emptyStops, skipsCarried };
  }
}

/**
 * As of the last of decoysAndMatches' records, with a match deleted after it: walks of an `as_of`
 * search (offsets 0 and 3) stop early and, resumed, list every match as it stood then.
 */
export async function expectAsOfWalksToStop(store: SourceStore, altIdPrefix: string): Promise<void> {
  const { records, matches } = decoysAndMatches(altIdPrefix);
  await store.insertMany(records);
  const asOf = Math.max(...records.map((r) => r.createdAt));
  // Deleted after the instant: still listed as it stood then.
  expect(await store.deleteById(matches[2], null, change({ at: asOf + 1_000 }))).toBe(true);
  for (const offset of [0, 3]) {
    const { seen, stops, skipsCarried } = await walkStopping(
      store,
      { ...listQuery(A, { intersects: DECOY_AREA, asOf }), offset },
      DECOY_TESTS_ALLOWANCE,
    );
    expect(seen).toEqual(matches.slice(offset));
    expect(stops).toBeGreaterThan(5);
    if (offset > 0) expect(skipsCarried).toBeGreaterThan(0);
  }
  // Today's list no longer has the deleted match.
  const today = await walkStopping(store, listQuery(A, { intersects: DECOY_AREA }), DECOY_TESTS_ALLOWANCE);
  expect(today.seen).toEqual(matches.filter((id) => id !== matches[2]));
}

/**
 * An `as_of` list whose plain filter (methodology) matches 5 of an account's 60 sources, as of the
 * last, with a match deleted after it: every source read costs the allowance (the events have no
 * index per filter), so walks (offsets 0 and 3) stop early and, resumed, list every match as it
 * stood then.
 */
export async function expectAsOfFilteredWalksToStop(store: SourceStore, altIdPrefix: string): Promise<void> {
  const records = Array.from({ length: 60 }, (_, i) =>
    makeRecord({ accountId: A, altId: `${altIdPrefix}-${i}`, methodology: i % 12 === 11 ? "M-kept" : "M-other" }),
  );
  // As stored: a store records a create no earlier than its last change (docs/api.md §14).
  const stored = await store.insertMany(records);
  const matches = ids(records.filter((_, i) => i % 12 === 11));
  const asOf = Math.max(...stored.map((r) => r.createdAt));
  expect(await store.deleteById(matches[2], null, change({ at: asOf + 1_000 }))).toBe(true);
  for (const offset of [0, 3]) {
    const { seen, stops, skipsCarried } = await walkStopping(
      store,
      { ...listQuery(A, { methodology: "M-kept", asOf }), offset },
      // Five sources read a page.
      5 * POSITIONS_PER_TEST,
    );
    expect(seen).toEqual(matches.slice(offset));
    expect(stops).toBeGreaterThan(5);
    if (offset > 0) expect(skipsCarried).toBeGreaterThan(0);
  }
}

export function describeListingContract(
  storeOf: () => SourceStore,
  makeStore: () => Promise<{ store: SourceStore; cleanup(): Promise<void> }>,
): void {
  let store: SourceStore;
  beforeEach(() => {
    store = storeOf();
  });

  describe("keyset pages (after)", () => {
    const T = BASE_TIME + 1_000_000;
    /** 26 records, four or so per created time, ids chosen so code-unit order matters. */
    function tiedRecords(): NewSourceRecord[] {
      const names = [
        "src_B",
        "src_a",
        "src_a0",
        "src_a_",
        "src_b",
        "src_Z9",
        "src_z",
        "src_00",
        "src_0",
        "src_9",
        "src_m1",
        "src_m10",
        "src_m2",
        "src_q",
        "src_Q",
        "src_r",
        "src_s",
        "src_t",
        "src_u",
        "src_v",
        "src_w",
        "src_x",
        "src_y",
        "src_yy",
        "src_c",
        "src_d",
      ];
      return names.map((id, i) =>
        makeRecord({ id, altId: `tied-${id}`, createdAt: T + Math.floor(((i * 7) % 26) / 4) }),
      );
    }

    it("walks every record exactly once, in (createdAt, id) order, whatever the page size", async () => {
      const records = tiedRecords();
      // Batches in creation order (a store records nothing before its last change), ties shuffled.
      const batches = inCreationOrder(shuffled(records, 11));
      await store.insertMany(batches.slice(0, 9));
      await store.insertMany(batches.slice(9, 17));
      await store.insertMany(batches.slice(17));
      const expected = ids(inListOrder(records));
      expect(ids(await store.list(listQuery(A)))).toEqual(expected);

      for (const size of [1, 2, 3, 4, 5, 7, 25, 26, 27, 1000]) {
        const pages = await walk(store, listQuery(A), size);
        expect(pages.flat(), `pages of ${size}`).toEqual(expected);
        // Every page but the last is full; the last is short (possibly empty).
        expect(
          pages.slice(0, -1).every((page) => page.length === size),
          `pages of ${size}`,
        ).toBe(true);
        expect(pages.at(-1)?.length, `pages of ${size}`).toBe(expected.length % size);
      }
    });

    it("starts strictly after the cursor, which need not be a stored record", async () => {
      const records = tiedRecords();
      await store.insertMany(records);
      const all = inListOrder(records);
      const listAfter = (cursor: ListCursor, limit = 1000) =>
        store.list({ ...listQuery(A), limit, after: cursor }).then(ids);

      for (const [k, record] of all.entries()) {
        expect(await listAfter(cursorOf(record)), `after ${record.id}`).toEqual(ids(all.slice(k + 1)));
      }
      // Between stored records: the same time, an id that no record has.
      const tied = all.filter((r) => r.createdAt === all[5].createdAt);
      const between = `${tied[0].id}!`;
      expect(await listAfter({ createdAt: tied[0].createdAt, id: between })).toEqual(
        ids(all.slice(all.indexOf(tied[0]) + 1)),
      );
      expect(await listAfter({ createdAt: tied[0].createdAt, id: "" })).toEqual(ids(all.slice(all.indexOf(tied[0]))));
      // Before every record, and after every record.
      expect(await listAfter({ createdAt: T - 1, id: "zzzz" })).toEqual(ids(all));
      expect(await listAfter({ createdAt: all.at(-1)!.createdAt, id: "zzzz" })).toEqual([]);
      expect(await listAfter({ createdAt: Number.MAX_SAFE_INTEGER, id: "" })).toEqual([]);
      // A deleted record's cursor still says where to go on from.
      const gone = all[10];
      expect(await store.deleteById(gone.id, A, change())).toBe(true);
      expect(await listAfter(cursorOf(gone), 3)).toEqual(ids(all.slice(11, 14)));
    });

    it("never repeats or skips a record that stays, while others are created and deleted between pages", async () => {
      const records = tiedRecords();
      await store.insertMany(records);
      const all = inListOrder(records);
      const seen: string[] = [];
      let after: ListCursor | undefined;
      let round = 0;
      const deleted = new Set<string>();
      for (;;) {
        const page = await store.list({ ...listQuery(A), limit: 4, after });
        seen.push(...ids(page));
        if (page.length < 4) break;
        after = cursorOf(page[page.length - 1]);
        round += 1;
        // Delete one record ahead of the cursor; create one requested at a late time and one at an early time.
        const ahead = all.find((r) => !deleted.has(r.id) && !seen.includes(r.id) && r.id !== all.at(-1)?.id);
        if (ahead) {
          deleted.add(ahead.id);
          await store.deleteById(ahead.id, A, change());
        }
        await store.insertMany([
          makeRecord({ id: `src_late_${round}`, createdAt: T + 1000 + round }),
          // In the place of the last record (MongoDB keeps the order of changes per place).
          makeRecord({ id: `src_early_${round}`, createdAt: T - 1000 - round, geometry: all.at(-1)?.geometry }),
        ]);
        if (round > 50) throw new Error("the walk does not end");
      }
      expect(new Set(seen).size).toBe(seen.length);
      // Every record live during the whole walk was seen, in order; deleted ones never after deletion.
      const stayed = ids(all).filter((id) => !deleted.has(id));
      expect(seen.filter((id) => stayed.includes(id))).toEqual(stayed);
      for (const id of deleted) expect(seen).not.toContain(id);
      // Records created ahead of the cursor are reached. One whose request came in at an earlier
      // time is recorded at the last change's instant, never before every record already there.
      expect(round).toBeGreaterThan(1);
      expect(seen.filter((id) => id.startsWith("src_late_")).length).toBeGreaterThan(0);
      for (let r = 1; r <= round; r++) {
        const early = await store.get(`src_early_${r}`, A);
        expect(early?.createdAt, `src_early_${r}`).toBeGreaterThanOrEqual(all.at(-1)?.createdAt ?? Number.NaN);
      }
    });

    describe("with every filter", () => {
      const T2 = BASE_TIME + 2_000_000;
      const START = Date.UTC(2024, 0, 1);
      const DAY = 86_400_000;
      let records: NewSourceRecord[];

      beforeEach(async () => {
        const random = prng(4242);
        const pickOf = <V>(values: readonly V[]) => values[Math.floor(random() * values.length)];
        records = Array.from({ length: 40 }, (_, i) =>
          makeRecord({
            id: `src_f${String((i * 13) % 40).padStart(2, "0")}`,
            altId: i === 0 || i === 14 ? "shared" : `filter-${i}`,
            accountId: i % 5 === 4 ? B : A,
            methodology: pickOf(["M1", "M2", null]),
            stewardId: pickOf(["S1", "S2", null]),
            projectId: pickOf(["P1", null]),
            outcomeReportingYear: pickOf([2024, 2025, null]),
            sourceType: pickOf(["FIELD", "SITE", null]),
            geometrySource: pickOf(["DERIVED", "CUSTODIAN_DRAWN", null]),
            attributeType: pickOf([[], ["BIODIVERSITY"], ["CARBON_REMOVAL", "BIODIVERSITY"], ["WATER_QUALITY"]]),
            conflict: random() < 0.4,
            startAt: START + (i % 4) * DAY,
            endAt: START + (i % 4) * DAY + (1 + (i % 3)) * DAY,
            createdAt: T2 + Math.floor(i / 3),
            geometry: square(10 + (i % 8) * 2, 10 + Math.floor(i / 8) * 2, 1),
          }),
        );
        const batches = inCreationOrder(shuffled(records, 5));
        await store.insertMany(batches.slice(0, 20));
        await store.insertMany(batches.slice(20));
      });

      type Predicate = (r: NewSourceRecord) => boolean;
      const inBox =
        (b: BoundingBox): Predicate =>
        (r) =>
          r.bbox.minX <= b.maxX && b.minX <= r.bbox.maxX && r.bbox.minY <= b.maxY && b.minY <= r.bbox.maxY;
      const cases: [string, string | null, () => Partial<ListQuery>, Predicate][] = [
        ["no filter", A, () => ({}), (r) => r.accountId === A],
        ["methodology", A, () => ({ methodology: "M1" }), (r) => r.accountId === A && r.methodology === "M1"],
        ["stewardId", A, () => ({ stewardId: "S2" }), (r) => r.accountId === A && r.stewardId === "S2"],
        ["projectId", A, () => ({ projectId: "P1" }), (r) => r.accountId === A && r.projectId === "P1"],
        [
          "outcomeReportingYear",
          A,
          () => ({ outcomeReportingYear: 2025 }),
          (r) => r.accountId === A && r.outcomeReportingYear === 2025,
        ],
        ["sourceType", A, () => ({ sourceType: "SITE" }), (r) => r.accountId === A && r.sourceType === "SITE"],
        [
          "geometrySource",
          A,
          () => ({ geometrySource: "DERIVED" }),
          (r) => r.accountId === A && r.geometrySource === "DERIVED",
        ],
        [
          "attributeTypes (ANY)",
          A,
          () => ({ attributeTypes: ["BIODIVERSITY", "WATER_QUALITY"] }),
          (r) => r.accountId === A && r.attributeType.some((t) => t === "BIODIVERSITY" || t === "WATER_QUALITY"),
        ],
        ["altId", null, () => ({ altId: "shared" }), (r) => r.altId === "shared"],
        ["conflict true", A, () => ({ conflict: true }), (r) => r.accountId === A && r.conflict],
        ["conflict false", null, () => ({ conflict: false }), (r) => !r.conflict],
        [
          "activeAt",
          A,
          () => ({ activeAt: START + 2 * DAY }),
          (r) => r.accountId === A && r.startAt <= START + 2 * DAY && START + 2 * DAY < r.endAt,
        ],
        [
          "activeDuring",
          A,
          () => ({ activeDuring: { start: START + DAY, end: START + 3 * DAY } }),
          (r) => r.accountId === A && r.startAt <= START + 3 * DAY && r.endAt > START + DAY,
        ],
        [
          "activeDuring open at the start, with activeAt",
          null,
          () => ({ activeDuring: { end: START + DAY }, activeAt: START }),
          (r) => r.startAt <= START + DAY && r.startAt <= START && START < r.endAt,
        ],
        ["bbox", A, () => ({ bbox: bbox(12, 12, 17, 15) }), (r) => r.accountId === A && inBox(bbox(12, 12, 17, 15))(r)],
        ["intersects", null, () => ({ intersects: polygon(ring(13, 11, 20, 14.5)) }), inBox(bbox(13, 11, 20, 14.5))],
        [
          "bbox + intersects + methodology",
          null,
          () => ({ bbox: bbox(10, 10, 18, 13), intersects: point(13, 13), methodology: "M2" }),
          (r) => r.methodology === "M2" && inBox(bbox(12, 12, 13, 13))(r),
        ],
        ["account B", B, () => ({}), (r) => r.accountId === B],
        ["admin", null, () => ({}), () => true],
        [
          "several at once",
          null,
          () => ({ conflict: false, activeAt: START + DAY, attributeTypes: ["BIODIVERSITY"] }),
          (r) =>
            !r.conflict &&
            r.startAt <= START + DAY &&
            START + DAY < r.endAt &&
            r.attributeType.includes("BIODIVERSITY"),
        ],
        ["id", A, () => ({ id: "src_f13" }), (r) => r.accountId === A && r.id === "src_f13"],
      ];

      it.each(cases)("%s", async (_label, accountId, filters, predicate) => {
        const expected = ids(inListOrder(records.filter(predicate)));
        const query = listQuery(accountId, filters());
        expect(ids(await store.list(query))).toEqual(expected);
        for (const size of [1, 2, 3])
          expect((await walk(store, query, size)).flat(), `pages of ${size}`).toEqual(expected);
        // From any record of the listing, and from a record the filters exclude.
        const listed = inListOrder(records.filter(predicate));
        for (const k of [0, Math.floor(listed.length / 2), listed.length - 1].filter((k) => k >= 0)) {
          const from = listed[k];
          if (from === undefined) continue;
          expect(ids(await store.list({ ...query, after: cursorOf(from) }))).toEqual(expected.slice(k + 1));
        }
        const excluded = inListOrder(records).find((r) => !predicate(r));
        if (excluded !== undefined) {
          const rest = inListOrder(records.filter(predicate)).filter(
            (r) => r.createdAt > excluded.createdAt || (r.createdAt === excluded.createdAt && r.id > excluded.id),
          );
          expect(ids(await store.list({ ...query, after: cursorOf(excluded) }))).toEqual(ids(rest));
        }
      });
    });
  });

  describe("offset", () => {
    it("still skips that many matches, after the filters", async () => {
      const records = Array.from({ length: 9 }, (_, i) => makeRecord({ conflict: i % 3 === 0 }));
      await store.insertMany(shuffled(records, 3));
      const matching = ids(records.filter((r) => !r.conflict));
      const page = (offset: number, limit: number) =>
        store.list(listQuery(A, { conflict: false, offset, limit })).then(ids);
      expect(await page(0, 2)).toEqual(matching.slice(0, 2));
      expect(await page(2, 2)).toEqual(matching.slice(2, 4));
      expect(await page(5, 10)).toEqual(matching.slice(5));
      expect(await page(6, 10)).toEqual([]);
    });
  });

  describe("conflict, active_at and alt_id filters", () => {
    it("conflict matches by equality, true and false alike", async () => {
      const records = [true, false, false, true, false].map((conflict) => makeRecord({ conflict }));
      await store.insertMany(records);
      expect(ids(await store.list(listQuery(A, { conflict: true })))).toEqual(ids(records.filter((r) => r.conflict)));
      expect(ids(await store.list(listQuery(A, { conflict: false })))).toEqual(ids(records.filter((r) => !r.conflict)));
      expect(ids(await store.list(listQuery(A)))).toEqual(ids(records));
      expect(await store.list(listQuery(B, { conflict: true }))).toEqual([]);
    });

    it("active_at: the period contains its start and not its end", async () => {
      const S = Date.UTC(2024, 5, 1);
      const E = Date.UTC(2024, 6, 1);
      const E2 = Date.UTC(2024, 7, 1);
      const first = makeRecord({ startAt: S, endAt: E });
      const next = makeRecord({ startAt: E, endAt: E2 });
      const short = makeRecord({ startAt: S, endAt: S + 1 });
      const long = makeRecord({ startAt: YEAR_1, endAt: LAST_MS });
      await store.insertMany([first, next, short, long]);
      const at = (t: number) => store.list(listQuery(A, { activeAt: t })).then(ids);

      expect(await at(S - 1)).toEqual([long.id]);
      expect(await at(S)).toEqual([first.id, short.id, long.id]);
      expect(await at(S + 1)).toEqual([first.id, long.id]);
      expect(await at(E - 1)).toEqual([first.id, long.id]);
      expect(await at(E)).toEqual([next.id, long.id]);
      expect(await at(E2 - 1)).toEqual([next.id, long.id]);
      expect(await at(E2)).toEqual([long.id]);
      expect(await at(LAST_MS)).toEqual([]);
      expect(await at(LAST_MS - 1)).toEqual([long.id]);
      expect(await at(YEAR_1)).toEqual([long.id]);
    });

    it("active_during: the period [start_at, end_at) meets the closed range; open ends", async () => {
      const S = Date.UTC(2024, 5, 1);
      const E = Date.UTC(2024, 6, 1);
      const E2 = Date.UTC(2024, 7, 1);
      const DAY = 86_400_000;
      const first = makeRecord({ startAt: S, endAt: E });
      const next = makeRecord({ startAt: E, endAt: E2 });
      const long = makeRecord({ startAt: YEAR_1, endAt: LAST_MS });
      await store.insertMany([first, next, long]);
      const during = (start?: number, end?: number) =>
        store.list(listQuery(A, { activeDuring: { start, end } })).then(ids);

      // An instant as [t, t] is active_at.
      expect(await during(S, S)).toEqual([first.id, long.id]);
      expect(await during(E, E)).toEqual([next.id, long.id]);
      // Closed at both ends: a range ending where a period starts meets it; starting where one ends does not.
      expect(await during(S - DAY, S)).toEqual([first.id, long.id]);
      expect(await during(S - DAY, S - 1)).toEqual([long.id]);
      expect(await during(E - 1, E)).toEqual([first.id, next.id, long.id]);
      expect(await during(E2, E2 + DAY)).toEqual([long.id]);
      // Open ends.
      expect(await during(undefined, S - 1)).toEqual([long.id]);
      expect(await during(E2 - 1, undefined)).toEqual([next.id, long.id]);
      expect(await during(undefined, undefined)).toEqual([first.id, next.id, long.id]);
    });

    it("alt_id matches exactly, within the account or across accounts for an admin", async () => {
      const mine = makeRecord({ altId: "Field 7" });
      const other = makeRecord({ altId: "field 7" });
      const theirs = makeRecord({ accountId: B, altId: "Field 7" });
      const unicode = makeRecord({ altId: "Ñandú ✓" });
      await store.insertMany([mine, other, unicode]);
      await store.insertMany([theirs]);
      expect(ids(await store.list(listQuery(A, { altId: "Field 7" })))).toEqual([mine.id]);
      expect(ids(await store.list(listQuery(A, { altId: "Ñandú ✓" })))).toEqual([unicode.id]);
      expect(ids(await store.list(listQuery(null, { altId: "Field 7" })))).toEqual([mine.id, theirs.id]);
      expect(ids(await store.list(listQuery(B, { altId: "field 7" })))).toEqual([]);
      expect(ids(await store.list(listQuery(A, { altId: "Field" })))).toEqual([]);
    });
  });

  describe("exact spatial filters", () => {
    // [10, 12]²
    const sq = () => makeRecord({ altId: "square", geometry: square(10, 10, 2) });
    // [20, 24]×[10, 14] without its quarter [22, 24]×[12, 14].
    const ell = () =>
      makeRecord({
        altId: "ell",
        geometry: polygon([
          [20, 10],
          [24, 10],
          [24, 12],
          [22, 12],
          [22, 14],
          [20, 14],
          [20, 10],
        ]),
      });
    // Right angle at (30, 10); the hypotenuse is x + y = 44.
    const tri = () =>
      makeRecord({
        altId: "triangle",
        geometry: polygon([
          [30, 10],
          [34, 10],
          [30, 14],
          [30, 10],
        ]),
      });
    // [10, 16]×[20, 26] with the hole [12, 14]×[22, 24].
    const holed = () => makeRecord({ altId: "holed", geometry: polygon(ring(10, 20, 16, 26), ring(12, 22, 14, 24)) });
    // |x − 25| + |y − 25| ≤ 2.
    const diamond = () =>
      makeRecord({
        altId: "diamond",
        geometry: polygon([
          [25, 23],
          [27, 25],
          [25, 27],
          [23, 25],
          [25, 23],
        ]),
      });
    // [30, 31]×[20, 21] and [34, 35]×[24, 25].
    const multi = () =>
      makeRecord({ altId: "multi", geometry: multiPolygon([ring(30, 20, 31, 21)], [ring(34, 24, 35, 25)]) });

    let shapes: Record<"sq" | "ell" | "tri" | "holed" | "diamond" | "multi", NewSourceRecord>;
    beforeEach(async () => {
      shapes = { sq: sq(), ell: ell(), tri: tri(), holed: holed(), diamond: diamond(), multi: multi() };
      await store.insertMany(Object.values(shapes));
    });
    type Shape = keyof typeof shapes;
    const ulp12 = 2 ** -49;

    const boxCases: [string, BoundingBox, Shape[]][] = [
      ["touching an edge", bbox(12, 10.5, 13, 11.5), ["sq"]],
      ["touching only a vertex", bbox(12, 12, 13, 13), ["sq"]],
      ["one ulp beyond an edge", bbox(12 + ulp12, 10, 13, 12), []],
      ["in an L's notch (in its bounding box)", bbox(22.5, 12.5, 23.5, 13.5), []],
      ["touching the notch's inner edges", bbox(22, 12, 23, 13), ["ell"]],
      ["in a triangle's empty corner (in its bounding box)", bbox(33, 13, 34, 14), []],
      ["touching the hypotenuse at its corner", bbox(32, 12, 33, 13), ["tri"]],
      ["in a hole", bbox(12.5, 22.5, 13.5, 23.5), []],
      ["touching the hole's ring from inside", bbox(12.5, 22.5, 14, 23.5), ["holed"]],
      ["in a diamond's box but not the diamond", bbox(26.5, 26.5, 27, 27), []],
      ["touching a diamond's vertex", bbox(27, 25, 28, 26), ["diamond"]],
      ["between a MultiPolygon's parts", bbox(31.5, 21.5, 33.5, 23.5), []],
      ["touching a MultiPolygon's second part at a vertex", bbox(33, 23, 34, 24), ["multi"]],
      ["a point on a corner", bbox(10, 10, 10, 10), ["sq"]],
      ["a point in a hole", bbox(13, 23, 13, 23), []],
      ["a line in a notch", bbox(22.5, 12.5, 22.5, 13.5), []],
      ["a line across an L's arm", bbox(21, 13, 23, 13), ["ell"]],
      ["a line ending on a vertex", bbox(30, 9, 30, 10), ["tri"]],
      ["a line along an edge", bbox(30, 11, 30, 13), ["tri"]],
      ["a line one ulp beside an edge", bbox(12 + ulp12, 10.5, 12 + ulp12, 11.5), []],
      ["everything", bbox(-180, -90, 180, 90), ["sq", "ell", "tri", "holed", "diamond", "multi"]],
    ];

    it.each(boxCases)("bbox %s", async (_label, box, expected) => {
      const want = expected.map((k) => shapes[k].id);
      expect(ids(await store.list(listQuery(A, { bbox: box })))).toEqual(want);
      expect(ids(await store.list(listQuery(A, { intersects: { type: "Box", box } })))).toEqual(want);
      if (box.minX < box.maxX && box.minY < box.maxY) {
        const asPolygon = polygon(ring(box.minX, box.minY, box.maxX, box.maxY));
        expect(ids(await store.list(listQuery(A, { intersects: asPolygon })))).toEqual(want);
      }
    });

    const areaCases: [string, SearchArea, Shape[]][] = [
      ["a point inside", point(11, 11), ["sq"]],
      ["a point on an edge", point(12, 11), ["sq"]],
      ["a point on a vertex", point(12, 12), ["sq"]],
      ["a point outside", point(13, 11), []],
      ["a point in a hole", point(13, 23), []],
      ["a point on a hole's ring", point(14, 23), ["holed"]],
      ["a point on a hypotenuse", point(32, 12), ["tri"]],
      ["a point just past a hypotenuse", point(33, 12), []],
      ["a point in an L's notch", point(23, 13), []],
      ["a point on the notch's edge", point(22, 13), ["ell"]],
      [
        "a triangle touching a vertex",
        polygon([
          [12, 12],
          [13, 12],
          [12, 13],
          [12, 12],
        ]),
        ["sq"],
      ],
      ["a frame whose hole holds a source", polygon(ring(8, 8, 14, 14), ring(9, 9, 13, 13)), []],
      ["a frame whose hole is a source's outline", polygon(ring(8, 8, 14, 14), ring(10, 10, 12, 12)), ["sq"]],
      ["a polygon in a source's hole", polygon(ring(12.2, 22.2, 13.8, 23.8)), []],
      [
        "a polygon crossing several",
        polygon(ring(11, 11, 31, 25.5)),
        ["sq", "ell", "tri", "holed", "diamond", "multi"],
      ],
      [
        "a MultiPolygon meeting one source with one part",
        multiPolygon([ring(0, 0, 1, 1)], [ring(11, 11, 11.5, 11.5)]),
        ["sq"],
      ],
      [
        "a MultiPolygon whose envelope holds everything and whose parts meet nothing",
        multiPolygon([ring(0, 0, 1, 1)], [ring(50, 50, 51, 51)]),
        [],
      ],
      [
        "a MultiPolygon touching two sources",
        multiPolygon([ring(35, 25, 36, 26)], [ring(16, 26, 17, 27)]),
        ["holed", "multi"],
      ],
      ["a Box", boxArea(29, 9, 30, 10), ["tri"]],
    ];

    it.each(areaCases)("intersects %s", async (_label, area, expected) => {
      expect(ids(await store.list(listQuery(A, { intersects: area })))).toEqual(expected.map((k) => shapes[k].id));
      expect(ids(await store.list(listQuery(null, { intersects: area })))).toEqual(expected.map((k) => shapes[k].id));
      expect(await store.list(listQuery(B, { intersects: area }))).toEqual([]);
    });

    it("returns whole records from a spatial list", async () => {
      expect(await store.list(listQuery(A, { intersects: point(11, 11) }))).toStrictEqual([stored(shapes.sq)]);
    });
  });

  describe("bbox and intersects together", () => {
    // [0, 40]×[40, 41], and two stubs each meeting one end's area only.
    const strip = () => makeRecord({ altId: "strip", geometry: polygon(ring(0, 40, 40, 41)) });
    const westStub = () => makeRecord({ altId: "west", geometry: polygon(ring(0, 42, 1, 43)) });
    const eastStub = () => makeRecord({ altId: "east", geometry: polygon(ring(39, 42, 40, 43)) });
    let s: NewSourceRecord;
    beforeEach(async () => {
      s = strip();
      await store.insertMany([westStub(), s, eastStub(), makeRecord({ geometry: square(10, 10, 2) })]);
    });

    it.each<[string, BoundingBox, SearchArea]>([
      ["a polygon at the other end", bbox(0, 40, 1, 43), polygon(ring(39, 40, 40, 43))],
      ["a point at the other end (the smaller envelope)", bbox(0, 40, 1, 43), point(39.5, 40.5)],
      ["a degenerate bbox at one end", bbox(0, 40.5, 0, 40.5), polygon(ring(39, 40, 40, 43))],
      [
        "a MultiPolygon whose envelope is far larger",
        bbox(39, 40, 40, 43),
        multiPolygon([ring(-1, 39, 1, 44)], [ring(60, 60, 61, 61)]),
      ],
    ])("a long source meets both areas whose envelopes do not meet: %s", async (_label, box, area) => {
      expect(ids(await store.list(listQuery(A, { bbox: box, intersects: area })))).toEqual([s.id]);
      expect(ids(await store.list(listQuery(null, { bbox: box, intersects: area })))).toEqual([s.id]);
    });

    it("a source must meet both: one is not enough", async () => {
      const sqId = (await store.list(listQuery(A, { bbox: bbox(10, 10, 12, 12) })))[0].id;
      expect(ids(await store.list(listQuery(A, { bbox: bbox(10, 10, 11, 11), intersects: point(12, 12) })))).toEqual([
        sqId,
      ]);
      expect(await store.list(listQuery(A, { bbox: bbox(10, 10, 11, 11), intersects: point(13, 13) }))).toEqual([]);
      expect(await store.list(listQuery(A, { bbox: bbox(0, 42, 1, 43), intersects: point(39.5, 42.5) }))).toEqual([]);
      expect(
        await store.list(listQuery(A, { bbox: bbox(10, 10, 12, 12), intersects: polygon(ring(0, 40, 40, 41)) })),
      ).toEqual([]);
    });
  });

  describe("limit and offset count exact matches", () => {
    const area = DECOY_AREA;

    it("fills a page of limit matches past many rejected candidates, and skips offset matches", async () => {
      const { records, matches } = decoysAndMatches("limit");
      await store.insertMany(records);
      for (const filters of [{ intersects: area }, { bbox: (area as { box: BoundingBox }).box }]) {
        const page = (limit: number, offset = 0, after?: ListCursor) =>
          store.list({ ...listQuery(A, filters), limit, offset, after }).then(ids);
        expect(await page(3)).toEqual(matches.slice(0, 3));
        expect(await page(1)).toEqual(matches.slice(0, 1));
        expect(await page(2, 2)).toEqual(matches.slice(2, 4));
        expect(await page(10, 4)).toEqual(matches.slice(4));
        expect(await page(10, 5)).toEqual([]);
        const second = records.find((r) => r.id === matches[1]) as NewSourceRecord;
        expect(await page(2, 0, cursorOf(second))).toEqual(matches.slice(2, 4));
        expect(await page(100)).toEqual(matches);
      }
    });

    it("stops a page once its exact tests spend the allowance; resumed where each stopped, a walk lists every match once", async () => {
      const { records, matches } = decoysAndMatches("allowance");
      await store.insertMany(records);
      // Each read may test two or three candidates.
      const ALLOWANCE = DECOY_TESTS_ALLOWANCE;
      for (const [filters, offset] of [
        [{ intersects: area }, 0],
        [{ intersects: area }, 3],
        [{ bbox: (area as { box: BoundingBox }).box }, 0],
        [{ bbox: (area as { box: BoundingBox }).box }, 4],
      ] as const) {
        const { seen, stops, skipsCarried } = await walkStopping(
          store,
          { ...listQuery(A, filters), offset },
          ALLOWANCE,
        );
        const what = JSON.stringify({ filters, offset });
        expect(seen, what).toEqual(matches.slice(offset));
        expect(stops, what).toBeGreaterThan(5);
        if (offset > 0) expect(skipsCarried, what).toBeGreaterThan(0);
      }
    });

    it("spends nothing on candidates whose boxes lie within a box area: they match untested", async () => {
      const inside = Array.from({ length: 6 }, (_, i) =>
        makeRecord({ altId: `within-${i}`, geometry: square(20 + i, 20, 0.5) }),
      );
      await store.insertMany(inside);
      for (const filters of [{ bbox: bbox(19, 19, 27, 21) }, { intersects: boxArea(19, 19, 27, 21) }]) {
        const exactTests = new ExactTestAllowance(1);
        const page = await store.list({ ...listQuery(A, filters), exactTests });
        expect(ids(page)).toEqual(ids(inside));
        expect(exactTests.exhausted).toBe(false);
      }
      // A polygon area (not a rectangle, which is read as its box) tests each one: an allowance of
      // one position stops after the first.
      const pentagon = polygon([
        [19, 19],
        [27, 19],
        [27, 21],
        [23, 22],
        [19, 21],
        [19, 19],
      ]);
      const exactTests = new ExactTestAllowance(1);
      const page = await store.list({ ...listQuery(A, { intersects: pentagon }), exactTests });
      expect(ids(page)).toEqual(ids(inside.slice(0, 1)));
      expect(exactTests.stoppedAt).toEqual({ ...cursorOf(stored(inside[0])), skip: 0 });
    });

    it("does so past thousands of candidates whose boxes meet the area", async () => {
      const decoys = Array.from({ length: 5_100 }, (_, i) =>
        makeRecord({ altId: `decoy-${i}`, geometry: i % 2 === 0 ? decoyTriangle() : decoyEll() }),
      );
      const hits = Array.from({ length: 3 }, (_, i) =>
        makeRecord({ altId: `hit-${i}`, geometry: square(49.9, 49.9, 1) }),
      );
      await insertInBatches(store, [...decoys, ...hits], 1000);
      const page = (limit: number, after?: ListCursor) =>
        store.list({ ...listQuery(A, { intersects: area }), limit, after }).then(ids);
      expect(await page(2)).toEqual(ids(hits.slice(0, 2)));
      expect(await page(2, cursorOf(hits[1]))).toEqual(ids(hits.slice(2)));
      expect(ids(await store.list({ ...listQuery(null, { bbox: bbox(49, 49, 50, 50) }), limit: 5 }))).toEqual(
        ids(hits),
      );
      // Thousands of inserts take a while on a networked store (MongoDB in CI).
    }, 120_000);
  });

  describe("account scoping of spatial queries", () => {
    it("shows a non-admin only its account's matches, an admin every account's", async () => {
      const mine = makeRecord({ accountId: A, geometry: square(5, 5, 1) });
      const theirs = makeRecord({ accountId: B, geometry: square(5, 5, 1) });
      const mineToo = makeRecord({ accountId: A, geometry: square(6, 6, 1) });
      await store.insertMany([mine, mineToo]);
      await store.insertMany([theirs]);
      for (const filters of [
        { bbox: bbox(6, 6, 7, 7) },
        { intersects: point(6, 6) },
        { intersects: polygon(ring(5.5, 5.5, 6, 6)) },
      ]) {
        expect(ids(await store.list(listQuery(A, filters)))).toEqual([mine.id, mineToo.id]);
        expect(ids(await store.list(listQuery(B, filters)))).toEqual([theirs.id]);
        expect(ids(await store.list(listQuery(null, filters)))).toEqual([mine.id, theirs.id, mineToo.id]);
        expect(await store.list(listQuery("acct_nobody", filters))).toEqual([]);
        expect((await walk(store, listQuery(null, filters), 1)).flat()).toEqual([mine.id, theirs.id, mineToo.id]);
        expect((await walk(store, listQuery(A, filters), 1)).flat()).toEqual([mine.id, mineToo.id]);
      }
    });
  });

  describe("a seeded brute-force model (JSTS intersects)", () => {
    it("lists exactly the model's matches in list order for every query, and so do pages of 7 walked with after", async () => {
      const model = searchModel();
      await insertInBatches(store, inCreationOrder(shuffled(model.records, 77)));
      const mismatches: string[] = [];
      const check = (what: string, c: (typeof model.cases)[number], got: string[], want: string[]) => {
        if (got.length === want.length && got.every((id, i) => id === want[i])) return;
        const missing = want.filter((id) => !got.includes(id));
        const extra = got.filter((id) => !want.includes(id));
        mismatches.push(
          `${what} ${describeCase(c)}\n  missing ${JSON.stringify(missing.slice(0, 5))} extra ${JSON.stringify(extra.slice(0, 5))}` +
            (missing.length === 0 && extra.length === 0 ? " (order differs)" : ""),
        );
      };
      for (const [n, c] of model.cases.entries()) {
        const query = { ...c.query, limit: 1000, offset: 0 };
        check("list", c, ids(await store.list(query)), c.expected);
        check("pages of 7", c, (await walk(store, query, 7)).flat(), c.expected);
        if (n % 5 === 0)
          check(
            "offset 3, limit 4",
            c,
            ids(await store.list({ ...query, offset: 3, limit: 4 })),
            c.expected.slice(3, 7),
          );
        if (mismatches.length >= 5) break;
      }
      expect(mismatches).toEqual([]);
    }, 600_000);
  });

  describe("ledgerSecret", () => {
    it("is 32 bytes, the same on every call, concurrent ones included", async () => {
      const [first, ...others] = await Promise.all([store.ledgerSecret(), store.ledgerSecret(), store.ledgerSecret()]);
      expect(first).toBeInstanceOf(Uint8Array);
      expect(first).toHaveLength(32);
      expect(first.some((byte) => byte !== 0)).toBe(true);
      for (const other of [...others, await store.ledgerSecret()])
        expect(Buffer.from(other)).toEqual(Buffer.from(first));
    });

    it("hands out a copy: changing the returned bytes changes nothing kept", async () => {
      const first = await store.ledgerSecret();
      const kept = Buffer.from(first);
      first.fill(0);
      expect(Buffer.from(await store.ledgerSecret())).toEqual(kept);
    });

    it("is the store's own: another store has another", async () => {
      const other = await makeStore();
      try {
        expect(Buffer.from(await other.store.ledgerSecret())).not.toEqual(Buffer.from(await store.ledgerSecret()));
      } finally {
        await other.cleanup();
      }
    });
  });
}
