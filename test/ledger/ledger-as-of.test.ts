/**
 * as_of through the ledger over the embedded store (docs/api.md §14): the ledger as it stood at an
 * instant, from the events: sources live then (since-deleted ones included), each flag as it was,
 * the filters applied, keyset pages; production only; a future instant is the current ledger.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { SourceDraft } from "../../src/ledger/commands.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { LedgerError } from "../../src/ledger/errors.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import type { Principal } from "../../src/model/principal.js";
import { createSandboxStore } from "../../src/store/sandbox/index.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

const user: Principal = {
  subject: "client-a",
  accountId: "acct-a",
  role: null,
  isAdmin: false,
  scopes: new Set(["read:sources", "write:sources", "delete:sources"]),
  actor: "Farm Co",
  expiresAt: 4_000_000_000,
};

function square(x: number, size = 2): SourceGeometry {
  const ring: Position[] = [
    [x, 0],
    [x + size, 0],
    [x + size, size],
    [x, size],
    [x, 0],
  ];
  return { type: "Polygon", coordinates: [ring] };
}

function draft(altId: string, geometry: SourceGeometry, methodology: string | null = null): SourceDraft {
  return {
    altId,
    ...NO_OPTIONAL_DRAFT_FIELDS,
    methodology,
    geometry,
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
  };
}

const T0 = Date.UTC(2026, 0, 1);

describe("as_of over the embedded store", () => {
  let store: SqliteSourceStore;
  let ledger: Ledger;
  let clock: number;
  const ids: Record<string, string> = {};

  beforeEach(async () => {
    store = openSqliteStore({ path: ":memory:", conflictPolicy });
    clock = T0;
    let n = 0;
    ledger = createLedger({
      environment: "production",
      store,
      newId: () => `src_${String(++n).padStart(4, "0")}`,
      secret: new Uint8Array(32),
      now: () => clock,
    });
    // t=1s: a; t=2s: b over a (a conflict) and c apart; t=3s: a deleted.
    clock = T0 + 1000;
    [ids.a] = (await ledger.create(user, { sources: [draft("a", square(0), "M")] })).map((r) => r.id);
    clock = T0 + 2000;
    [ids.b, ids.c] = (await ledger.create(user, { sources: [draft("b", square(1)), draft("c", square(10), "M")] })).map(
      (r) => r.id,
    );
    clock = T0 + 3000;
    await ledger.delete(user, { key: { by: "id", value: ids.a } });
    clock = T0 + 10_000;
  });

  afterEach(() => store.close());

  const at = async (asOf: number, filters = {}) =>
    (await ledger.list(user, { filters, asOf })).records.map((r) => [r.altId, r.conflict]);

  it("lists the sources live at the instant, each flag as it was then", async () => {
    expect(await at(T0 + 500)).toEqual([]);
    expect(await at(T0 + 1000)).toEqual([["a", false]]);
    expect(await at(T0 + 2000)).toEqual([
      ["a", true],
      ["b", true],
      ["c", false],
    ]);
    expect(await at(T0 + 3000)).toEqual([
      ["b", false],
      ["c", false],
    ]);
  });

  it("applies the filters and pages by keyset", async () => {
    expect(await at(T0 + 2500, { methodology: "M" })).toEqual([
      ["a", true],
      ["c", false],
    ]);
    const first = await ledger.list(user, { filters: {}, asOf: T0 + 2500, limit: 2 });
    expect(first.records.map((r) => r.altId)).toEqual(["a", "b"]);
    const second = await ledger.list(user, {
      filters: {},
      asOf: T0 + 2500,
      limit: 2,
      pageToken: first.nextPageToken ?? "",
    });
    expect(second.records.map((r) => r.altId)).toEqual(["c"]);
    expect(second.nextPageToken).toBeNull();
    // A token of the as_of listing is not one of the current ledger.
    await expect(ledger.list(user, { filters: {}, limit: 2, pageToken: first.nextPageToken ?? "" })).rejects.toThrow(
      LedgerError,
    );
  });

  it("gets a source as it stood, also one deleted since; 404 before it existed or after its delete", async () => {
    expect((await ledger.get(user, { id: ids.a, asOf: T0 + 2000 })).conflict).toBe(true);
    expect((await ledger.get(user, { id: ids.a, asOf: T0 + 1500 })).conflict).toBe(false);
    await expect(ledger.get(user, { id: ids.a, asOf: T0 + 3000 })).rejects.toMatchObject({ kind: "not_found" });
    await expect(ledger.get(user, { id: ids.b, asOf: T0 + 1000 })).rejects.toMatchObject({ kind: "not_found" });
    await expect(ledger.get(user, { id: ids.a })).rejects.toMatchObject({ kind: "not_found" });
  });

  it("reads an instant not in the past as the current ledger", async () => {
    expect(await at(T0 + 60_000)).toEqual([
      ["b", false],
      ["c", false],
    ]);
  });

  it("records a create queued behind a later delete at the delete's instant: no instant shows a state that never was", async () => {
    // d over b comes in at 4s; its write waits for the group commit, while b's delete, come in at
    // 5s, commits at once. d found b gone, so it has no pair: were it recorded at 4s, the instants
    // between would show b and d both live and unflagged, which the ledger never was.
    clock = T0 + 4000;
    const creating = ledger.create(user, { sources: [draft("d", square(1.5))] });
    clock = T0 + 5000;
    await ledger.delete(user, { key: { by: "id", value: ids.b } });
    const [d] = await creating;

    expect(d.createdAt).toBe(T0 + 5000);
    expect((await ledger.get(user, { id: d.id })).createdAt).toBe(T0 + 5000);
    expect(await at(T0 + 4500)).toEqual([
      ["b", false],
      ["c", false],
    ]);
    expect(await at(T0 + 5000)).toEqual([
      ["c", false],
      ["d", false],
    ]);
    const history = await ledger.history(user, { id: d.id });
    expect(history.items.map((event) => [event.type, event.at])).toEqual([["created", T0 + 5000]]);
  });

  it("keeps other accounts out", async () => {
    const other = { ...user, accountId: "acct-b", subject: "client-b" };
    expect((await ledger.list(other, { filters: {}, asOf: T0 + 2500 })).records).toEqual([]);
    await expect(ledger.get(other, { id: ids.a, asOf: T0 + 2000 })).rejects.toMatchObject({ kind: "not_found" });
  });
});

describe("as_of in the sandbox", () => {
  it("is refused: the sandbox lets go of deleted sources' records", async () => {
    const store = createSandboxStore({ ttlMs: 60_000 });
    const ledger = createLedger({
      environment: "sandbox",
      store,
      newId: () => "sandbox_1",
      secret: new Uint8Array(32),
    });
    try {
      await expect(ledger.list(user, { filters: {}, asOf: 1 })).rejects.toMatchObject({
        kind: "invalid",
        violations: [
          {
            field: "as_of",
            detail: "as_of exists only in production: the sandbox lets go of deleted sources' records",
          },
        ],
      });
    } finally {
      await store.close();
    }
  });
});
