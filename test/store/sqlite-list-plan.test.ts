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
import {
  CREATED_BY_KEY_SQL,
  createdWithinKeysSql,
  EVENTS_OF_SQL,
  GET_AS_OF_SQL,
  listAsOfParams,
  listAsOfSql,
  PAIRS_OF_SQL,
  windowEndParams,
  windowEndSql,
} from "../../src/store/sqlite/history.js";
import { buildListStatement, recordBySeqStatement, type SpatialPlan } from "../../src/store/sqlite/list-query.js";
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
  it("driving: the R*Tree's candidates are read by key and their keys sorted, whatever else filters", () => {
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

describe("with the geometry wire bytes (RecordRead.geometryWire)", () => {
  it("a page walks the same index and looks each row's bytes up by its key, without a sort", () => {
    expect(planOf({ ...base, after, geometryWire: true })).toEqual([
      "SEARCH s USING INDEX sources_account_created (account_id=? AND (created_at,id)>(?,?))",
      "SEARCH w USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
    ]);
  });

  it("a spatial list reads as without them, each row's bytes looked up by its key", () => {
    expect(planOf({ ...base, after, geometryWire: true }, "probing")).toEqual([
      "SEARCH s USING INDEX sources_account_created (account_id=? AND (created_at,id)>(?,?))",
      "SCAN b VIRTUAL TABLE INDEX 1:",
      "SEARCH w USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN",
    ]);
    // Driving sorts keys only; each record and its bytes are then read by key.
    expect(planOf({ ...base, geometryWire: true }, "driving")).toEqual([
      "SCAN b VIRTUAL TABLE INDEX 2:B0D1B2D3",
      "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
      "USE TEMP B-TREE FOR ORDER BY",
    ]);
    for (const geometryWire of [false, true]) {
      const { sql } = recordBySeqStatement(geometryWire);
      const plan = db
        .prepare(`EXPLAIN QUERY PLAN ${sql}`)
        .all(1)
        .map((row) => (row as { detail: string }).detail);
      expect(plan).toEqual([
        "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
        ...(geometryWire ? ["SEARCH w USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"] : []),
      ]);
    }
  });
});

describe("history reads (docs/api.md §14) seek by key, whatever the ledger's age", () => {
  const planOfSql = (sql: string, params: (string | number)[]): string[] =>
    db
      .prepare(`EXPLAIN QUERY PLAN ${sql}`)
      .all(...params)
      .map((row) => (row as { detail: string }).detail);
  const T = 1_700_000_000_000;
  /** Each candidate costs seeks by id: its deleted event, its live row (joined), its events (the flag). */
  const perCandidate = [
    "SEARCH d USING COVERING INDEX source_events_deleted (source_id=? AND at<?)",
    "SEARCH s USING INDEX sqlite_autoindex_sources_1 (id=?) LEFT-JOIN",
    "SEARCH f USING INDEX source_events_by_source (source_id=?)",
  ];

  it.each<[string, boolean, boolean, string]>([
    ["every account", false, false, "source_events_created (at<?)"],
    ["one account", true, false, "source_events_account_created (account_id=? AND at<?)"],
    [
      "one account, after a cursor",
      true,
      true,
      "source_events_account_created (account_id=? AND (at,source_id)>(?,?) AND at<?)",
    ],
    ["every account, after a cursor", false, true, "source_events_created ((at,source_id)>(?,?) AND at<?)"],
  ])("an as_of list, %s: a window of created events in list order, no sort", (_name, inAccount, after, index) => {
    const scope = {
      asOf: T,
      accountId: inAccount ? "acct" : null,
      after: after ? { createdAt: T - 1, id: "src_x" } : null,
    };
    const plan = planOfSql(listAsOfSql(inAccount, after), listAsOfParams(scope, 202, null, 101));
    // The window: the list order's index alone, read as the page goes (a co-routine).
    expect(plan.slice(0, 3)).toEqual(["CO-ROUTINE win", `SEARCH w USING COVERING INDEX ${index}`, "SCAN win"]);
    expect(
      plan
        .filter((line) => line.startsWith("SEARCH"))
        .slice(1)
        .sort(),
    ).toEqual([...perCandidate, "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"].sort());
    // A source deleted by the instant is left out before its event's row is read.
    expect(plan.indexOf(perCandidate[0])).toBeLessThan(plan.indexOf("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"));
    expect(plan.join("\n")).not.toContain("TEMP B-TREE");
    // Where a window ends: the same index, keys only.
    expect(planOfSql(windowEndSql(inAccount, after), windowEndParams(scope, 202))).toEqual([
      `SEARCH w USING COVERING INDEX ${index}`,
    ]);
  });

  describe("an as_of list within an area (the spatial index of the past, source_event_bbox)", () => {
    const within = "h.min_x <= ? AND h.max_x >= ? AND h.min_y <= ? AND h.max_y >= ?";
    const envelope = [1, 0, 1, 0];

    it.each<[string, boolean, boolean, string]>([
      [
        "one account, after a cursor",
        true,
        true,
        "source_events_account_created (account_id=? AND (at,source_id)>(?,?) AND at<?)",
      ],
      ["every account", false, false, "source_events_created (at<?)"],
    ])(
      "probing, %s: a window of created events in list order, each one's box looked up by its key",
      (_name, inAccount, after, index) => {
        const scope = {
          asOf: T,
          accountId: inAccount ? "acct" : null,
          after: after ? { createdAt: T - 1, id: "src_x" } : null,
        };
        const plan = planOfSql(listAsOfSql(inAccount, after, within), listAsOfParams(scope, 16, envelope, 8));
        expect(plan.slice(0, 3)).toEqual(["CO-ROUTINE win", `SEARCH w USING COVERING INDEX ${index}`, "SCAN win"]);
        // The box by its key before the event's row: a box missing the area costs no row.
        expect(plan.indexOf("SCAN h VIRTUAL TABLE INDEX 1:")).toBeGreaterThan(0);
        expect(plan.indexOf("SCAN h VIRTUAL TABLE INDEX 1:")).toBeLessThan(
          plan.indexOf("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"),
        );
        expect(plan.join("\n")).not.toContain("TEMP B-TREE");
      },
    );

    it("driving: the R*Tree's candidates, their events read by key, keys sorted; each row then read by its key", () => {
      for (const [inAccount, after] of [
        [true, true],
        [false, false],
      ]) {
        const params: (string | number)[] = [...envelope, T, T];
        if (inAccount) params.push("acct");
        if (after) params.push(T - 1, "src_x");
        expect(planOfSql(createdWithinKeysSql(within, inAccount, after), params)).toEqual([
          "SCAN h VIRTUAL TABLE INDEX 2:B0D1B2D3",
          "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)",
          "CORRELATED SCALAR SUBQUERY 1",
          "SEARCH d USING COVERING INDEX source_events_deleted (source_id=? AND at<?)",
          "USE TEMP B-TREE FOR ORDER BY",
        ]);
      }
      const byKey = planOfSql(CREATED_BY_KEY_SQL, [T, 7]);
      expect(byKey[0]).toBe("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)");
      expect(byKey).toContain("SEARCH s USING INDEX sqlite_autoindex_sources_1 (id=?) LEFT-JOIN");
    });
  });

  it("a get as_of finds the created event by its key (seq 1)", () => {
    const plan = planOfSql(GET_AS_OF_SQL, [T, "src_x", T, T]);
    expect(plan[0]).toBe("SEARCH e USING INDEX source_events_by_source (source_id=? AND seq=?)");
    expect(
      plan
        .filter((line) => line.startsWith("SEARCH"))
        .slice(1)
        .sort(),
    ).toEqual([...perCandidate].sort());
  });

  it("a page of conflicts reads one range of each side's (side, event) index, merged in order without a sort", () => {
    const plan = db
      .prepare(`EXPLAIN QUERY PLAN ${PAIRS_OF_SQL}`)
      .all({ seq: 7, after: 40 })
      .map((row) => (row as { detail: string }).detail);
    expect(plan).toEqual([
      "MERGE (UNION ALL)",
      "LEFT",
      "SEARCH p USING INDEX conflict_pairs_a_event (a_seq=? AND a_event>?)",
      "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
      "RIGHT",
      "SEARCH p USING INDEX conflict_pairs_b_event (b_seq=? AND b_event>?)",
      "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)",
    ]);
  });

  it("a history page reads the source's events by key from its seq on, the live row by id", () => {
    expect(planOfSql(EVENTS_OF_SQL, ["src_x", 40]).filter((line) => line.startsWith("SEARCH"))).toEqual([
      "SEARCH e USING INDEX source_events_by_source (source_id=? AND seq>?)",
      "SEARCH s USING INDEX sqlite_autoindex_sources_1 (id=?) LEFT-JOIN",
    ]);
  });
});
