/**
 * An `as_of` list with a spatial filter (src/store/sqlite/history.ts listAsOf) stops where its exact
 * tests spend the page's allowance, as the live list does (the contract suite), and a walk resumed
 * where each page stopped lists every match as it stood, a since-deleted one included.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ExactTestAllowance } from "../../src/model/exact-tests.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { change, ids, listQuery, makeRecord } from "../contract/fixtures.js";
import { expectAsOfFilteredWalksToStop, expectAsOfWalksToStop, walkStopping } from "../contract/listing-contract.js";

let dir: string;
let store: SqliteSourceStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "ledger-as-of-exact-"));
  store = await openSqliteStore({ path: join(dir, "ledger.sqlite") });
});

afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("as_of lists and the exact tests' allowance", () => {
  it("stops pages early and, resumed where each stopped, lists the matches live then, with the offset carried", async () => {
    await expectAsOfWalksToStop(store, "as-of");
  });

  it("a filter matching few: every source read costs, so pages stop early and, resumed, list every match", async () => {
    await expectAsOfFilteredWalksToStop(store, "as-of-filtered");
  });

  it("an account whose sources were deleted by the instant: each query's window of them costs, so pages stop early and, resumed, list the live ones", async () => {
    const account = "acct_mostly_deleted";
    const gone = Array.from({ length: 1_500 }, (_, i) => makeRecord({ accountId: account, altId: `gone-${i}` }));
    await store.insertMany(gone);
    for (const record of gone) expect(await store.deleteById(record.id, null, change())).toBe(true);
    const live = Array.from({ length: 5 }, (_, i) => makeRecord({ accountId: account, altId: `live-${i}` }));
    const stored = await store.insertMany(live);
    const asOf = Math.max(...stored.map((r) => r.createdAt));

    // With the whole allowance, one read passes over the 1,500 and lists the 5.
    const whole = new ExactTestAllowance();
    expect(ids(await store.list({ ...listQuery(account, { asOf }), limit: 10, exactTests: whole }))).toEqual(ids(live));
    expect(whole.stoppedAt).toBeUndefined();

    // With 600 positions, a read passes over ~500 of them: the first page is empty and says where to go on.
    const first = new ExactTestAllowance(600);
    expect(await store.list({ ...listQuery(account, { asOf }), limit: 2, exactTests: first })).toEqual([]);
    expect(first.stoppedAt).toBeDefined();
    const { seen, stops } = await walkStopping(store, listQuery(account, { asOf }), 600);
    expect(seen).toEqual(ids(live));
    expect(stops).toBeGreaterThanOrEqual(2);
  });
});
