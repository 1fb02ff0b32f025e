/**
 * A source's history and conflicts a page at a time (docs/api.md §14): keyset pages on the
 * source's own event seqs (its events; the conflict_set event of each conflict), tokens bound to
 * the source and the caller that name nothing but that history, never another account's source.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { SourceDraft } from "../../src/ledger/commands.js";
import { conflictPolicy } from "../../src/ledger/conflict.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import { PageTokens, pageTokenKey } from "../../src/ledger/page-token.js";
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

  // The field's history: created (seq 1), then five conflict_set events (seqs 2…6), one per conflict.
  it.each([
    { listing: "history", read: "history", limit: 4, sizes: [4, 2], afterSeqs: [0, 4] },
    { listing: "conflicts", read: "conflictsOf", limit: 3, sizes: [3, 2], afterSeqs: [0, 4] },
  ] as const)(
    "asks the store for each $listing page alone: after its last item's event seq, one more than the limit",
    async ({ listing, read, limit, sizes, afterSeqs }) => {
      const asked: unknown[] = [];
      const original = store[read].bind(store) as (...args: unknown[]) => Promise<unknown>;
      Object.assign(store, {
        [read]: (...args: unknown[]) => {
          asked.push(args[2]);
          return original(...args);
        },
      });
      const first = await ledger[listing](farm, { id: field, limit });
      const second = await ledger[listing](farm, { id: field, limit, pageToken: first.nextPageToken ?? "" });
      expect([first.items.length, second.items.length, second.nextPageToken]).toEqual([...sizes, null]);
      expect(asked).toEqual(afterSeqs.map((afterSeq) => ({ afterSeq, limit: limit + 1 })));
    },
  );

  it("walks the conflicts in the order the history recorded them, each once, with tokens that name no counterpart", async () => {
    const all = await ledger.conflicts(farm, { id: field });
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
    expect(refs).toEqual(all.items.map((conflict) => conflict.counterpart.ref));
    // The field's conflict_set events (seqs 2…6) are the mill's creates, one after another.
    const history = await ledger.history(farm, { id: field });
    expect(all.items.map((conflict) => conflict.detectedAt)).toEqual(history.items.slice(1).map((event) => event.at));
    expect(tokens).toHaveLength(2);
    for (const token of tokens) {
      const text = Buffer.from(token, "base64url").toString("latin1");
      for (const id of millIds) expect(text).not.toContain(id);
      expect(text).not.toContain("SECRET");
    }
  });

  it("refuses a conflicts token made before pages followed event seqs (keyed on detected_at and a ref)", async () => {
    const keys = new PageTokens(pageTokenKey(new Uint8Array(32).fill(3)));
    const binding = JSON.stringify(["production", "conflicts", false, farm.accountId, field]);
    const [firstConflict] = (await ledger.conflicts(farm, { id: field, limit: 1 })).items;
    const old = keys.mint({ createdAt: firstConflict.detectedAt, id: firstConflict.counterpart.ref ?? "" }, binding);
    await expect(ledger.conflicts(farm, { id: field, limit: 2, pageToken: old })).rejects.toMatchObject({
      kind: "invalid",
      violations: [{ field: "page_token" }],
    });
    // The same binding with the source's own id and an event seq is this version's token.
    const current = keys.mint({ createdAt: 2, id: field }, binding);
    expect((await ledger.conflicts(farm, { id: field, limit: 2, pageToken: current })).items).toHaveLength(2);
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
