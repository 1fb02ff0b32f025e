/**
 * The query plans of the embedded store's list statements (src/store/sqlite/list-query.ts), read
 * with EXPLAIN QUERY PLAN: a keyset page seeks to its cursor in the list order's index (a page's
 * cost does not grow with its depth, docs/api.md §12), and a spatial list reads the R*Tree's
 * candidates by key when it drives, or walks the list order and probes each row's box.
 */
import type Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListQuery } from "../../src/model/list-query.js";
import { openConnection } from "../../src/store/sqlite/connection.js";
import { buildListStatement, type SpatialPlan } from "../../src/store/sqlite/list-query.js";
import { runMigrations } from "../../src/store/sqlite/migrations.js";
import { MIGRATIONS } from "../../src/store/sqlite/schema.js";

let db: Database.Database;

beforeAll(() => {
  db = openConnection({ path: ":memory:", busyTimeoutMs: 0 });
  runMigrations(db, MIGRATIONS);
});

afterAll(() => db.close());

const ENVELOPE = { minX: 0, minY: 0, maxX: 1, maxY: 1 };
const base: ListQuery = { accountId: "acct", limit: 10, offset: 0 };
const after = { createdAt: 1_700_000_000_000, id: "src_x" };

function planOf(query: ListQuery, plan: SpatialPlan | null = null): string[] {
  const statement = buildListStatement(query, plan === null ? null : { envelope: ENVELOPE, plan });
  return db
    .prepare(`EXPLAIN QUERY PLAN ${statement.sql}`)
    .all(...statement.params)
    .map((row) => (row as { detail: string }).detail);
}

describe("keyset pages seek to the cursor in the list order's index", () => {
  it.each<[string, ListQuery, string]>([
    ["one account", { ...base, after }, "sources_account_created (account_id=? AND (created_at,id)>(?,?))"],
    ["every account (admin)", { ...base, accountId: null, after }, "sources_created ((created_at,id)>(?,?))"],
    [
      "with an equality filter",
      { ...base, methodology: "M", after },
      "sources_account_methodology (account_id=? AND methodology=? AND (created_at,id)>(?,?))",
    ],
    [
      "with the conflict filter",
      { ...base, conflict: true, after },
      "sources_account_conflict (account_id=? AND conflict=? AND (created_at,id)>(?,?))",
    ],
  ])("%s", (_name, query, index) => {
    const plan = planOf(query);
    expect(plan).toEqual([`SEARCH s USING INDEX ${index}`]);
  });

  it("never sorts a plain page: the index gives the order", () => {
    expect(planOf({ ...base, activeAt: 5, after }).join("\n")).not.toContain("TEMP B-TREE");
  });
});

describe("spatial lists", () => {
  it("driving: the R*Tree's candidates are read by key and sorted, whatever else filters", () => {
    for (const query of [base, { ...base, methodology: "M", after }, { ...base, accountId: null }]) {
      const plan = planOf(query, "driving");
      expect(plan).toEqual([
        "SCAN b VIRTUAL TABLE INDEX 2:B0D1B2D3",
        "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
        "USE TEMP B-TREE FOR ORDER BY",
      ]);
    }
  });

  it("probing: the list order's index is walked and each row's box looked up by its key", () => {
    const plan = planOf({ ...base, after }, "probing");
    expect(plan).toEqual([
      "SEARCH s USING INDEX sources_account_created (account_id=? AND (created_at,id)>(?,?))",
      "SCAN b VIRTUAL TABLE INDEX 1:",
    ]);
  });
});
