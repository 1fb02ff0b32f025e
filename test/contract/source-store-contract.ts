import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { encodeGeometry } from "../../src/geo/geometry-wire.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord } from "../../src/model/records.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { AltIdTakenError, type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { BASE_TIME, change, ids, listQuery, makeFullRecord, makeRecord, square, stored } from "./fixtures.js";
import { describeHistoryContract, type HistoryContractOptions } from "./history-contract.js";
import { describeListingContract } from "./listing-contract.js";

export interface StoreUnderTest {
  store: SourceStore;
  /** Releases everything the store used; must tolerate a store the test already closed. */
  cleanup(): Promise<void>;
}

const A = "acct_a";
const B = "acct_b";

/** How a store meets the history part of the contract (history-contract.ts). */
export type ContractOptions = Partial<HistoryContractOptions>;

/**
 * The behaviour every SourceStore must show; each store's test file runs it against its own store.
 * `options.makeConflictStore` adds the conflict-pair part of docs/api.md §14 (a store of the same
 * kind with the production conflict policy).
 */
export function describeSourceStoreContract(
  name: string,
  makeStore: () => Promise<StoreUnderTest>,
  options: ContractOptions = {},
): void {
  describe(`SourceStore contract: ${name}`, () => {
    let store: SourceStore;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ store, cleanup } = await makeStore());
    });

    afterEach(async () => {
      await cleanup();
    });

    describe("insert and read back", () => {
      it("returns every field as given, geometry included, from insertMany, get and list", async () => {
        const full = makeFullRecord({ accountId: A });
        const [returned] = await store.insertMany([full]);

        expect(returned).toStrictEqual(stored(full));
        expect(await store.get(full.id, A)).toStrictEqual(stored(full));
        expect(await store.list(listQuery(A))).toStrictEqual([stored(full)]);
      });

      it("with the geometry wire bytes asked for, the same records; bytes attached are the geometry's encoding", async () => {
        const multi = makeFullRecord({ accountId: A });
        const polygon = makeRecord({ accountId: A, geometry: square(-180, -90, 0.000001) });
        await store.insertMany([multi, polygon]);
        const read = { geometryWire: true };
        const reads = [
          await store.get(multi.id, A, read),
          await store.get(polygon.id, null, read),
          ...(await store.list({ ...listQuery(A), ...read })),
          ...(await store.list({ ...listQuery(A), ...read, bbox: { minX: -180, minY: -90, maxX: 180, maxY: 90 } })),
        ];
        expect(reads.map((r) => r?.id)).toEqual([multi.id, polygon.id, multi.id, polygon.id, multi.id, polygon.id]);
        for (const record of reads) {
          if (record === null) throw new Error("not found");
          expect(record).toStrictEqual(stored(record.id === multi.id ? multi : polygon));
          if (record.geometryWire === undefined) continue;
          expect(Buffer.from(record.geometryWire)).toEqual(
            Buffer.from(encodeGeometry(geometryToProto(record.geometry))),
          );
        }
      });

      it("keeps geometry exactly as submitted: same numbers, same order, same type", async () => {
        const multi = makeFullRecord();
        const polygon = makeRecord({ geometry: square(-180, -90, 0.000001) });
        await store.insertMany([multi, polygon]);

        for (const record of [multi, polygon]) {
          const got = await store.get(record.id, record.accountId);
          expect(JSON.stringify(got?.geometry)).toBe(JSON.stringify(record.geometry));
        }
      });

      it("keeps null optionals as null and empty arrays as empty", async () => {
        const bare = makeRecord();
        await store.insertMany([bare]);

        const got = await store.get(bare.id, bare.accountId);
        expect(got).toStrictEqual(stored(bare));
        expect(got).toMatchObject({
          methodology: null,
          stewardId: null,
          projectId: null,
          outcomeReportingYear: null,
          sourceType: null,
          geometrySource: null,
          unepOverlap: null,
          tags: [],
          attributeType: [],
          conflict: false,
        });
      });

      it("returns records in request order", async () => {
        const batch = [makeRecord({ createdAt: BASE_TIME }), makeRecord({ createdAt: BASE_TIME - 5 }), makeRecord()];
        expect(ids(await store.insertMany(batch))).toEqual(ids(batch.map(stored)));
      });

      it("treats an empty batch as a no-op", async () => {
        expect(await store.insertMany([])).toEqual([]);
        expect(await store.list(listQuery(null))).toEqual([]);
      });

      it("hands out copies: changing a returned record changes nothing stored", async () => {
        const record = makeFullRecord();
        const expected = structuredClone(stored(record));
        const [returned] = await store.insertMany([record]);
        returned.tags.push("changed");
        (await store.get(record.id, null))?.attributeType.pop();
        (await store.list(listQuery(null)))[0]?.geometry.coordinates.pop();
        record.tags.push("changed after insert");

        expect(await store.get(record.id, null)).toStrictEqual(expected);
      });
    });

    describe("account scoping", () => {
      let mine: NewSourceRecord;
      let theirs: NewSourceRecord;

      beforeEach(async () => {
        mine = makeRecord({ accountId: A });
        theirs = makeRecord({ accountId: B });
        await store.insertMany([mine]);
        await store.insertMany([theirs]);
      });

      it("get of another account's id is null", async () => {
        expect(await store.get(theirs.id, A)).toBeNull();
        expect(await store.get(mine.id, A)).toStrictEqual(stored(mine));
      });

      it("list shows only the account's own records", async () => {
        expect(ids(await store.list(listQuery(A)))).toEqual([mine.id]);
        expect(ids(await store.list(listQuery(B)))).toEqual([theirs.id]);
        expect(await store.list(listQuery("acct_nobody"))).toEqual([]);
      });

      it("delete of another account's record is false and leaves it untouched", async () => {
        expect(await store.deleteById(theirs.id, A, change())).toBe(false);
        expect(await store.deleteByAltId(theirs.altId, A, change())).toBe(false);
        expect(await store.get(theirs.id, B)).toStrictEqual(stored(theirs));
      });

      it("admin (null account) reads any account's records", async () => {
        expect(await store.get(theirs.id, null)).toStrictEqual(stored(theirs));
        expect(ids(await store.list(listQuery(null)))).toEqual([mine.id, theirs.id]);
      });

      it("admin (null account) deletes any account's record", async () => {
        expect(await store.deleteById(theirs.id, null, change())).toBe(true);
        expect(await store.get(theirs.id, null)).toBeNull();
        expect(await store.get(mine.id, A)).toStrictEqual(stored(mine));
      });
    });

    describe("list filters", () => {
      const r = {} as Record<"r1" | "r2" | "r3" | "r4" | "r5", NewSourceRecord>;

      beforeEach(async () => {
        r.r1 = makeRecord({
          altId: "shared",
          methodology: "M1",
          stewardId: "S1",
          projectId: "P1",
          outcomeReportingYear: 2024,
          sourceType: "FIELD",
          geometrySource: "CUSTODIAN_DRAWN",
          attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
        });
        r.r2 = makeRecord({
          methodology: "M1",
          stewardId: "S2",
          projectId: "P1",
          outcomeReportingYear: 2025,
          sourceType: "SITE",
          geometrySource: "DERIVED",
          attributeType: ["BIODIVERSITY"],
        });
        r.r3 = makeRecord({
          methodology: "M2",
          stewardId: "S1",
          projectId: "P2",
          outcomeReportingYear: 2024,
          sourceType: "FIELD",
          geometrySource: "DERIVED",
        });
        r.r4 = makeRecord({ attributeType: ["WATER_QUALITY"] });
        r.r5 = makeRecord({
          accountId: B,
          altId: "shared",
          methodology: "M1",
          stewardId: "S1",
          projectId: "P1",
          outcomeReportingYear: 2024,
          sourceType: "FIELD",
          geometrySource: "CUSTODIAN_DRAWN",
          attributeType: ["CARBON_REMOVAL"],
        });
        await store.insertMany([r.r1, r.r2, r.r3, r.r4]);
        await store.insertMany([r.r5]);
      });

      const cases: [string, string | null, () => Partial<ListQuery>, (keyof typeof r)[]][] = [
        ["no filter", A, () => ({}), ["r1", "r2", "r3", "r4"]],
        ["methodology", A, () => ({ methodology: "M1" }), ["r1", "r2"]],
        ["stewardId", A, () => ({ stewardId: "S1" }), ["r1", "r3"]],
        ["projectId", A, () => ({ projectId: "P2" }), ["r3"]],
        ["outcomeReportingYear", A, () => ({ outcomeReportingYear: 2024 }), ["r1", "r3"]],
        ["sourceType", A, () => ({ sourceType: "FIELD" }), ["r1", "r3"]],
        ["geometrySource", A, () => ({ geometrySource: "DERIVED" }), ["r2", "r3"]],
        ["attributeTypes, one value", A, () => ({ attributeTypes: ["BIODIVERSITY"] }), ["r1", "r2"]],
        [
          "attributeTypes, ANY of two",
          A,
          () => ({ attributeTypes: ["CARBON_REMOVAL", "WATER_QUALITY"] }),
          ["r1", "r4"],
        ],
        [
          "attributeTypes, a record matching two values once",
          A,
          () => ({ attributeTypes: ["BIODIVERSITY", "CARBON_REMOVAL"] }),
          ["r1", "r2"],
        ],
        ["attributeTypes, no match", A, () => ({ attributeTypes: ["RENEWABLE_ENERGY"] }), []],
        ["id", A, () => ({ id: r.r3.id }), ["r3"]],
        ["id of another account", A, () => ({ id: r.r5.id }), []],
        ["altId", A, () => ({ altId: "shared" }), ["r1"]],
        ["a value nobody has", A, () => ({ methodology: "M9" }), []],
        ["methodology + stewardId", A, () => ({ methodology: "M1", stewardId: "S1" }), ["r1"]],
        [
          "sourceType + year + geometrySource",
          A,
          () => ({ sourceType: "FIELD", outcomeReportingYear: 2024, geometrySource: "DERIVED" }),
          ["r3"],
        ],
        [
          "methodology + attributeTypes + sourceType",
          A,
          () => ({ methodology: "M1", attributeTypes: ["BIODIVERSITY"], sourceType: "SITE" }),
          ["r2"],
        ],
        ["projectId + attributeTypes", A, () => ({ projectId: "P1", attributeTypes: ["CARBON_REMOVAL"] }), ["r1"]],
        ["contradictory filters", A, () => ({ methodology: "M2", stewardId: "S2" }), []],
        [
          "every filter at once",
          A,
          () => ({
            methodology: "M1",
            stewardId: "S1",
            projectId: "P1",
            outcomeReportingYear: 2024,
            sourceType: "FIELD",
            geometrySource: "CUSTODIAN_DRAWN",
            attributeTypes: ["CARBON_REMOVAL"],
            id: r.r1.id,
            altId: "shared",
          }),
          ["r1"],
        ],
        ["admin, no filter", null, () => ({}), ["r1", "r2", "r3", "r4", "r5"]],
        ["admin, methodology", null, () => ({ methodology: "M1" }), ["r1", "r2", "r5"]],
        ["admin, attributeTypes", null, () => ({ attributeTypes: ["CARBON_REMOVAL"] }), ["r1", "r5"]],
        ["admin, altId across accounts", null, () => ({ altId: "shared" }), ["r1", "r5"]],
        ["admin, id", null, () => ({ id: r.r5.id }), ["r5"]],
        ["admin, stewardId + year", null, () => ({ stewardId: "S1", outcomeReportingYear: 2024 }), ["r1", "r3", "r5"]],
      ];

      it.each(cases)("%s", async (_label, accountId, filters, expected) => {
        const found = await store.list(listQuery(accountId, filters()));
        expect(ids(found)).toEqual(expected.map((k) => r[k].id));
      });

      it("returns whole records, not only ids", async () => {
        expect(await store.list(listQuery(B))).toStrictEqual([stored(r.r5)]);
      });
    });

    describe("order and paging", () => {
      it("orders by createdAt, then by id, whatever the insertion order of sources created at one instant", async () => {
        const c = makeRecord({ id: "src_c", createdAt: BASE_TIME });
        const a = makeRecord({ id: "src_a", createdAt: BASE_TIME });
        const b = makeRecord({ id: "src_b", createdAt: BASE_TIME });
        const earlier = makeRecord({ id: "src_z", createdAt: BASE_TIME - 1 });
        await store.insertMany([earlier]);
        await store.insertMany([c]);
        await store.insertMany([b, a]);

        expect(ids(await store.list(listQuery(A)))).toEqual(["src_z", "src_a", "src_b", "src_c"]);
      });

      it("orders admin lists the same way across accounts", async () => {
        await store.insertMany([makeRecord({ id: "src_c", accountId: B, createdAt: BASE_TIME - 1 })]);
        await store.insertMany([makeRecord({ id: "src_b", accountId: A, createdAt: BASE_TIME })]);
        await store.insertMany([makeRecord({ id: "src_a", accountId: B, createdAt: BASE_TIME })]);

        expect(ids(await store.list(listQuery(null)))).toEqual(["src_c", "src_a", "src_b"]);
      });

      it("applies limit and offset after ordering and filtering", async () => {
        const records = Array.from({ length: 5 }, () => makeRecord({ methodology: "M" }));
        await store.insertMany([...records].reverse());
        await store.insertMany([makeRecord({ methodology: "other" })]);
        const page = (limit: number, offset: number) =>
          store.list(listQuery(A, { methodology: "M", limit, offset })).then(ids);
        const all = ids(records.map(stored));

        expect(await page(2, 0)).toEqual(all.slice(0, 2));
        expect(await page(2, 2)).toEqual(all.slice(2, 4));
        expect(await page(2, 4)).toEqual(all.slice(4));
        expect(await page(1000, 5)).toEqual([]);
        expect(await page(1, 0)).toEqual(all.slice(0, 1));
      });
    });

    describeListingContract(() => store, makeStore);

    describeHistoryContract(() => store, { keepsRecordOfDeleted: true, ...options });

    describe("alt_id uniqueness", () => {
      it("rejects a batch reusing stored alt_ids, naming exactly those, and stores nothing", async () => {
        const existing = [makeRecord({ altId: "taken-1" }), makeRecord({ altId: "taken-2" })];
        await store.insertMany(existing);
        const batch = [
          makeRecord({ altId: "fresh-1" }),
          makeRecord({ altId: "taken-2" }),
          makeRecord({ altId: "fresh-2" }),
          makeRecord({ altId: "taken-1" }),
        ];

        const error = await store.insertMany(batch).catch((e: unknown) => e);

        expect(error).toBeInstanceOf(AltIdTakenError);
        expect((error as AltIdTakenError).accountId).toBe(A);
        expect([...(error as AltIdTakenError).altIds].sort()).toEqual(["taken-1", "taken-2"]);
        expect(ids(await store.list(listQuery(null)))).toEqual(ids(existing.map(stored)));
      });

      it("rejects a batch repeating an alt_id within itself and stores nothing", async () => {
        const batch = [makeRecord({ altId: "twice" }), makeRecord({ altId: "once" }), makeRecord({ altId: "twice" })];

        const error = await store.insertMany(batch).catch((e: unknown) => e);

        expect(error).toBeInstanceOf(AltIdTakenError);
        expect((error as AltIdTakenError).altIds).toEqual(["twice"]);
        expect(await store.list(listQuery(null))).toEqual([]);
      });

      it("allows the same alt_id in two accounts", async () => {
        await store.insertMany([makeRecord({ accountId: A, altId: "same" })]);
        await store.insertMany([makeRecord({ accountId: B, altId: "same" })]);

        expect(await store.list(listQuery(null, { altId: "same" }))).toHaveLength(2);
      });

      it("frees the alt_id when its source is deleted by id", async () => {
        const first = makeRecord({ altId: "reuse" });
        await store.insertMany([first]);
        expect(await store.deleteById(first.id, A, change())).toBe(true);

        const second = makeRecord({ altId: "reuse" });
        await store.insertMany([second]);
        expect(await store.list(listQuery(A, { altId: "reuse" }))).toStrictEqual([stored(second)]);
      });

      it("frees the alt_id when its source is deleted by alt_id", async () => {
        const first = makeRecord({ altId: "reuse" });
        await store.insertMany([first]);
        expect(await store.deleteByAltId("reuse", A, change())).toBe(true);
        expect(await store.get(first.id, A)).toBeNull();

        const second = makeRecord({ altId: "reuse" });
        await store.insertMany([second]);
        expect(await store.list(listQuery(A, { altId: "reuse" }))).toStrictEqual([stored(second)]);
      });
    });

    describe("delete", () => {
      it("deletes only the named record", async () => {
        const [keep, drop] = [makeRecord(), makeRecord()];
        await store.insertMany([keep, drop]);

        expect(await store.deleteById(drop.id, A, change())).toBe(true);
        expect(ids(await store.list(listQuery(A)))).toEqual([keep.id]);
      });

      it("returns false for a missing id or alt_id, and for a second delete", async () => {
        const record = makeRecord();
        await store.insertMany([record]);

        expect(await store.deleteById("src_missing", A, change())).toBe(false);
        expect(await store.deleteById("src_missing", null, change())).toBe(false);
        expect(await store.deleteByAltId("missing", A, change())).toBe(false);
        expect(await store.deleteById(record.id, A, change())).toBe(true);
        expect(await store.deleteById(record.id, A, change())).toBe(false);
        expect(await store.deleteByAltId(record.altId, A, change())).toBe(false);
      });
    });

    describe("lifecycle", () => {
      it("ping resolves while open", async () => {
        await expect(store.ping()).resolves.toBeUndefined();
      });

      it("is unavailable after close, and close is idempotent", async () => {
        await store.close();
        await store.close();

        await expect(store.ping()).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.list(listQuery(null))).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.get("src_x", null)).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.insertMany([makeRecord()])).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.deleteById("src_x", null, change())).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.deleteByAltId("x", A, change())).rejects.toBeInstanceOf(StoreUnavailableError);
        await expect(store.ledgerSecret()).rejects.toBeInstanceOf(StoreUnavailableError);
      });
    });
  });
}
