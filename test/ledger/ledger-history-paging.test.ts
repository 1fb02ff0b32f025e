/**
 * A source's history and conflicts a page at a time (docs/api.md §14): keyset pages (seq for
 * events, detected_at and the pair's ref for conflicts), tokens bound to the source and the caller,
 * and a conflicts token that carries the ref, never another account's source id.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { SourceDraft } from "../../src/ledger/commands.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import type { Principal } from "../../src/model/principal.js";
import { openSqliteStore, type SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

function principal(accountId: string, actor: string): Principal {
  return {
    subject: `client-${accountId}`,
    accountId,
    role: null,
    isAdmin: false,
    scopes: new Set(["read:sources", "write:sources", "delete:sources"]),
    actor,
    expiresAt: 4_000_000_000,
  };
}

const farm = principal("acct-farm", "Farm Co");
const mill = principal("acct-mill", "Mill Co");

function square(x: number, size: number): SourceGeometry {
  const ring: Position[] = [
    [x, 0],
    [x + size, 0],
    [x + size, size],
    [x, size],
    [x, 0],
  ];
  return { type: "Polygon", coordinates: [ring] };
}

function draft(altId: string, geometry: SourceGeometry): SourceDraft {
  return {
    altId,
    ...NO_OPTIONAL_DRAFT_FIELDS,
    geometry,
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
  };
}

describe("history and conflicts, a page at a time", () => {
  let store: SqliteSourceStore;
  let ledger: Ledger;
  let field: string;
  let millIds: string[];

  beforeEach(async () => {
    store = openSqliteStore({ path: ":memory:", conflictPolicy });
    let n = 0;
    let clock = Date.UTC(2026, 0, 1);
    ledger = createLedger({
      environment: "production",
      store,
      newId: () => `src_${String(++n).padStart(4, "0")}`,
      secret: new Uint8Array(32).fill(3),
      now: () => (clock += 1000),
    });
    [field] = (await ledger.create(farm, { sources: [draft("field", square(0, 10))] })).map((r) => r.id);
    // Five Mill Co sources over the field, one request each: five pairs, five conflict_set events.
    millIds = [];
    for (let i = 0; i < 5; i++) {
      const [record] = await ledger.create(mill, { sources: [draft(`SECRET-${i}`, square(i * 2, 1.5))] });
      millIds.push(record.id);
    }
  });

  afterEach(() => store.close());

  it("walks the history by seq", async () => {
    const seqs: number[] = [];
    let pageToken: string | undefined;
    do {
      const page = await ledger.history(farm, { id: field, limit: 2, pageToken });
      expect(page.items.length).toBeLessThanOrEqual(2);
      seqs.push(...page.items.map((event) => event.seq));
      pageToken = page.nextPageToken ?? undefined;
    } while (pageToken !== undefined);
    expect(seqs).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("asks the store for each history page alone: after its seq, one more than the limit", async () => {
    const asked: unknown[] = [];
    const history = store.history.bind(store);
    store.history = (id, accountId, page) => {
      asked.push(page);
      return history(id, accountId, page);
    };
    const first = await ledger.history(farm, { id: field, limit: 4 });
    const second = await ledger.history(farm, { id: field, limit: 4, pageToken: first.nextPageToken ?? "" });
    expect([first.items.length, second.items.length, second.nextPageToken]).toEqual([4, 2, null]);
    expect(asked).toEqual([
      { afterSeq: 0, limit: 5 },
      { afterSeq: 4, limit: 5 },
    ]);
  });

  it("walks the conflicts by detection and ref, each once, with tokens that name no counterpart", async () => {
    const refs: string[] = [];
    const tokens: string[] = [];
    let pageToken: string | undefined;
    do {
      const page = await ledger.conflicts(farm, { id: field, limit: 2, pageToken });
      refs.push(...page.items.map((conflict) => conflict.counterpart.ref ?? ""));
      pageToken = page.nextPageToken ?? undefined;
      if (pageToken) tokens.push(pageToken);
    } while (pageToken !== undefined);
    expect(new Set(refs).size).toBe(5);
    expect(tokens).toHaveLength(2);
    for (const token of tokens) {
      const text = Buffer.from(token, "base64url").toString("latin1");
      for (const id of millIds) expect(text).not.toContain(id);
      expect(text).not.toContain("SECRET");
    }
  });

  it("refuses a token of another source or another caller", async () => {
    const page = await ledger.history(farm, { id: field, limit: 2 });
    const token = page.nextPageToken ?? "";
    await expect(ledger.history(mill, { id: millIds[0], limit: 2, pageToken: token })).rejects.toMatchObject({
      kind: "invalid",
      violations: [{ field: "page_token" }],
    });
    const conflicts = await ledger.conflicts(farm, { id: field, limit: 2 });
    await expect(
      ledger.history(farm, { id: field, limit: 2, pageToken: conflicts.nextPageToken ?? "" }),
    ).rejects.toMatchObject({ kind: "invalid" });
  });

  it("checks the page token before looking the source up: a bad token is 422 for an unknown id too, on both", async () => {
    const token = (await ledger.history(farm, { id: field, limit: 2 })).nextPageToken ?? "";
    for (const id of ["src_unknown", millIds[0]]) {
      await expect(ledger.history(farm, { id, limit: 2, pageToken: token })).rejects.toMatchObject({
        kind: "invalid",
        violations: [{ field: "page_token" }],
      });
      await expect(ledger.conflicts(farm, { id, limit: 2, pageToken: token })).rejects.toMatchObject({
        kind: "invalid",
        violations: [{ field: "page_token" }],
      });
    }
    // Without a token, an unknown id is 404 on both.
    await expect(ledger.history(farm, { id: "src_unknown" })).rejects.toMatchObject({ kind: "not_found" });
    await expect(ledger.conflicts(farm, { id: "src_unknown" })).rejects.toMatchObject({ kind: "not_found" });
  });

  it("checks the limit like a list's", async () => {
    await expect(ledger.history(farm, { id: field, limit: 0 })).rejects.toMatchObject({
      kind: "invalid",
      violations: [{ field: "limit", detail: "limit must be from 1 to 1000, got 0" }],
    });
  });
});
