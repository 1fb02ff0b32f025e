/**
 * An `as_of` list with a spatial filter (src/store/sqlite/history.ts listAsOf) stops where its exact
 * tests spend the page's allowance, as the live list does (the contract suite), and a walk resumed
 * where each page stopped lists every match as it stood, a since-deleted one included.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { expectAsOfFilteredWalksToStop, expectAsOfWalksToStop } from "../contract/listing-contract.js";

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
});
