/**
 * An `as_of` list within an area reads the embedded store's spatial index of the past
 * (source_event_bbox, docs/api.md §14): driven from it when the envelope meets at most
 * DRIVING_CANDIDATES boxes, else walking the list order and looking each box up. Either way, walked
 * to its end it lists exactly the sources live at the instant whose geometry meets the area,
 * since-deleted ones included and later ones left out, in list order, against a brute force over
 * the whole as_of listing.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { boundingBox, boxesIntersect } from "../../src/geo/bbox.js";
import type { BoundingBox } from "../../src/geo/types.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord, SourceRecord } from "../../src/model/records.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { DRIVING_CANDIDATES } from "../../src/store/sqlite/list-query.js";
import { BASE_TIME, change, listQuery, makeRecord, square } from "../contract/fixtures.js";
import { walkStopping } from "../contract/listing-contract.js";

const ACCOUNT = "acct_a";
/** A grid of 0.05° squares, 0.1° apart, from (0, 0): 80 columns. */
const COLUMNS = 80;
const COUNT = DRIVING_CANDIDATES + 400;
const at = (i: number) => BASE_TIME + i * 10;

let dir: string;
let store: SqliteSourceStore;
let records: NewSourceRecord[];
/** Live until this instant: after every create but the late ones, before the deletes. */
const BEFORE_DELETES = at(COUNT) + 5;
/** After the deletes, before the late creates. */
const AFTER_DELETES = at(COUNT) + 5_000;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-as-of-spatial-"));
  store = openSqliteStore({ path: join(dir, "ledger.sqlite") });
  records = Array.from({ length: COUNT }, (_, i) => {
    const x = (i % COLUMNS) * 0.1;
    const y = Math.floor(i / COLUMNS) * 0.1;
    // Every seventh in another account: out of scope for the account's lists.
    return makeRecord({
      accountId: i % 7 === 3 ? "acct_b" : ACCOUNT,
      geometry: square(x, y, 0.05),
      createdAt: at(i),
    });
  });
  for (let i = 0; i < records.length; i += 1_000) await store.insertMany(records.slice(i, i + 1_000));
  // Every fifth deleted, then 50 more created over the same grid after the deletes.
  for (let i = 0; i < COUNT; i += 5) {
    expect(await store.deleteById(records[i].id, null, change({ at: at(COUNT) + 1_000 + i }))).toBe(true);
  }
  const late = Array.from({ length: 50 }, (_, i) =>
    makeRecord({ accountId: ACCOUNT, geometry: square(i * 0.1 + 0.02, 0.02, 0.05), createdAt: AFTER_DELETES + 1 + i }),
  );
  await store.insertMany(late);
  records.push(...late);
}, 60_000);

afterAll(async () => {
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Every record of a listing, page after page along the cursor. */
async function walk(query: ListQuery): Promise<SourceRecord[]> {
  const seen: SourceRecord[] = [];
  for (;;) {
    const last = seen.at(-1);
    const page = await store.list({
      ...query,
      limit: 700,
      ...(last === undefined ? {} : { after: { createdAt: last.createdAt, id: last.id } }),
    });
    seen.push(...page);
    if (page.length < 700) return seen;
  }
}

describe.each([
  ["probing: the envelope meets more than DRIVING_CANDIDATES boxes", { minX: -1, minY: -1, maxX: 9, maxY: 9 }],
  ["driving: the envelope meets a few hundred", { minX: 1.01, minY: 0.3, maxX: 3.5, maxY: 2.04 }],
])("%s", (_name, bbox) => {
  for (const [instant, label] of [
    [BEFORE_DELETES, "before the deletes"],
    [AFTER_DELETES, "after the deletes"],
    [AFTER_DELETES + 10_000, "after the late creates"],
  ] as const) {
    it(`as of ${label}: exactly the sources live then that meet the area, in list order`, async () => {
      const everything = await walk(listQuery(ACCOUNT, { asOf: instant }));
      const expected = everything.filter((r) => boxesIntersect(boundingBox(r.geometry), bbox)).map((r) => r.id);
      const within = await walk(listQuery(ACCOUNT, { asOf: instant, bbox }));
      expect(within.map((r) => r.id)).toEqual(expected);
      expect(expected.length).toBeGreaterThan(label === "before the deletes" ? 100 : 50);
      // Each as it stood: the live list today agrees on a source live then and now.
      const today = new Map((await walk(listQuery(ACCOUNT, { bbox }))).map((r) => [r.id, r]));
      for (const record of within) {
        const now = today.get(record.id);
        if (now !== undefined) expect(record).toEqual(now);
      }
    });
  }
});

describe("probing past a stretch of boxes that miss the area", () => {
  let otherDir: string;
  let other: SqliteSourceStore;
  /** 5,100 squares in the area, then 3,000 far east of it, then 20 more in it. */
  const inArea = (i: number) => square((i % 100) * 0.1, Math.floor(i / 100) * 0.1, 0.05);
  const area = { minX: -1, minY: -1, maxX: 11, maxY: 6 };
  let expected: string[];
  let asOf: number;

  beforeAll(async () => {
    otherDir = mkdtempSync(join(tmpdir(), "ledger-as-of-probing-"));
    other = openSqliteStore({ path: join(otherDir, "ledger.sqlite") });
    const first = Array.from({ length: 5_100 }, (_, i) => makeRecord({ accountId: ACCOUNT, geometry: inArea(i) }));
    const away = Array.from({ length: 3_000 }, (_, i) =>
      makeRecord({ accountId: ACCOUNT, geometry: square(100 + (i % 100) * 0.1, Math.floor(i / 100) * 0.1, 0.05) }),
    );
    const last = Array.from({ length: 20 }, (_, i) => makeRecord({ accountId: ACCOUNT, geometry: inArea(i) }));
    let stored: SourceRecord[] = [];
    for (const batch of [first, away, last])
      for (let i = 0; i < batch.length; i += 1_000) stored = await other.insertMany(batch.slice(i, i + 1_000));
    asOf = Math.max(...stored.map((r) => r.createdAt));
    expected = [...first, ...last].map((r) => r.id);
  }, 60_000);

  afterAll(async () => {
    await other?.close();
    rmSync(otherDir, { recursive: true, force: true });
  });

  it("with a small allowance, pages stop in the stretch, empty, and resumed there list every source in the area", async () => {
    expect(expected.length).toBeGreaterThan(DRIVING_CANDIDATES);
    const { seen, emptyStops } = await walkStopping(other, listQuery(ACCOUNT, { asOf, bbox: area }), 1_000, 100);
    expect(seen).toEqual(expected);
    // The 3,000 boxes away cost the windows passing over them: reads there end empty.
    expect(emptyStops).toBeGreaterThan(0);
  });
});

it("the probing envelope does meet more than DRIVING_CANDIDATES boxes, the driving one fewer", () => {
  const meeting = (bbox: BoundingBox) => records.filter((r) => boxesIntersect(r.bbox, bbox)).length;
  expect(meeting({ minX: -1, minY: -1, maxX: 9, maxY: 9 })).toBeGreaterThan(DRIVING_CANDIDATES);
  expect(meeting({ minX: 1.01, minY: 0.3, maxX: 3.5, maxY: 2.04 })).toBeLessThan(DRIVING_CANDIDATES);
});
