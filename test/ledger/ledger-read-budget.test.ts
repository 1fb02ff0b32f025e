/**
 * A page read for a message answer (gRPC, Connect) stops early once the geometry text read passes
 * four times the answer's bytes (ListCommand.answerBytes, src/ledger/ledger.ts): the store reads
 * no more large sources than the answer can carry, and the page's token resumes right after.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { SourceDraft } from "../../src/ledger/commands.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import type { Principal } from "../../src/model/principal.js";
import type { SqliteSourceStore } from "../../src/store/sqlite/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

const user: Principal = {
  subject: "client-a",
  accountId: "acct-a",
  role: null,
  isAdmin: false,
  scopes: new Set(["read:sources", "write:sources"]),
  actor: "Farm Co",
  expiresAt: 4_000_000_000,
};

/** A closed ring of `n` positions around (cx, 0) at full double precision: ~40 characters a position. */
function circle(cx: number, n: number): SourceGeometry {
  const ring: Position[] = [];
  for (let i = 0; i < n - 1; i++) {
    const angle = (2 * Math.PI * i) / (n - 1);
    ring.push([cx + 0.4 * Math.cos(angle), 0.4 * Math.sin(angle)]);
  }
  ring.push(ring[0]);
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

describe("a page read for a bounded answer", () => {
  let store: SqliteSourceStore;
  let ledger: Ledger;

  beforeEach(async () => {
    store = openSqliteStore({ path: ":memory:" });
    ledger = createLedger({ environment: "production", store, newId: idScheme(), secret: new Uint8Array(32) });
    // Eight sources of 5,000 positions: ~200,000 characters of geometry text each.
    await ledger.create(user, { sources: Array.from({ length: 8 }, (_, i) => draft(`big-${i}`, circle(i, 5_000))) });
  });

  afterEach(() => store.close());

  it("stops once the text read passes 4 × answerBytes, and the token resumes after the last record", async () => {
    const seen: string[] = [];
    let pageToken: string | undefined;
    let pages = 0;
    do {
      const page = await ledger.list(user, { filters: {}, limit: 1000, pageToken, answerBytes: 100_000 });
      // 400,000 characters: the second record of a page passes it.
      expect(page.records.length).toBeLessThanOrEqual(2);
      seen.push(...page.records.map((r) => r.altId));
      pageToken = page.nextPageToken ?? undefined;
      pages += 1;
    } while (pageToken !== undefined);
    expect(seen).toEqual(Array.from({ length: 8 }, (_, i) => `big-${i}`));
    expect(pages).toBe(4);
  });

  it("reads the whole page without answerBytes (REST streams every record)", async () => {
    const page = await ledger.list(user, { filters: {}, limit: 1000 });
    expect(page.records).toHaveLength(8);
    expect(page.nextPageToken).toBeNull();
  });

  it("applies to a list as of an instant too, page after page", async () => {
    const asOf = Date.now();
    const seen: string[] = [];
    let pageToken: string | undefined;
    do {
      const page = await ledger.list(user, { filters: {}, limit: 1000, asOf, pageToken, answerBytes: 100_000 });
      expect(page.records.length).toBeLessThanOrEqual(2);
      seen.push(...page.records.map((r) => r.altId));
      pageToken = page.nextPageToken ?? undefined;
    } while (pageToken !== undefined);
    expect(seen).toEqual(Array.from({ length: 8 }, (_, i) => `big-${i}`));
  });

  it("applies to a spatial list too", async () => {
    const box = { minX: -1, minY: -1, maxX: 9, maxY: 1 };
    const page = await ledger.list(user, { filters: { bbox: box }, limit: 1000, answerBytes: 100_000 });
    expect(page.records.map((r) => r.altId)).toEqual(["big-0", "big-1"]);
    expect(page.nextPageToken).not.toBeNull();
  });
});

function idScheme(): () => string {
  let n = 0;
  return () => `src_${String(++n).padStart(4, "0")}`;
}
