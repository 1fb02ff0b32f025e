/**
 * Paging and search through the ledger core (src/ledger/ledger.ts), over the SQLite store on
 * `:memory:` and the sandbox store: pages and next_page_token (none on the last page, also when
 * exactly `limit` records were left), tokens bound to the listing (filters, caller, account scope,
 * environment, search area), page_token with offset, the validation of bbox and search areas with
 * every message, all violations at once, and the secret asked for once (again after a failure).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SearchArea, SourceGeometry } from "../../src/geo/types.js";
import type { ListCommand, SearchCommand, SourceDraft } from "../../src/ledger/commands.js";
import { LedgerError } from "../../src/ledger/errors.js";
import { createLedger, type Ledger, type ListPage } from "../../src/ledger/ledger.js";
import type { Violation } from "../../src/ledger/violation.js";
import type { Environment, ListFilterValues } from "../../src/model/list-query.js";
import type { Principal } from "../../src/model/principal.js";
import type { SourceRecord } from "../../src/model/records.js";
import { type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { createSandboxStore } from "../../src/store/sandbox/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

const TEST_SECRET = new Uint8Array(32).fill(7);
const OTHER_SECRET = new Uint8Array(32).fill(8);
const START = Date.UTC(2024, 0, 1);
const END = Date.UTC(2025, 0, 1);
const T0 = Date.UTC(2025, 2, 4, 10, 15, 30, 123);

function principal(overrides: Partial<Principal> = {}): Principal {
  return {
    subject: "client-a",
    accountId: "acct-a",
    role: null,
    isAdmin: false,
    scopes: new Set(["read:sources", "write:sources", "delete:sources"]),
    actor: "Farm Co",
    expiresAt: 4_000_000_000,
    ...overrides,
  };
}

const userA = principal();
const userB = principal({ subject: "client-b", accountId: "acct-b", actor: "Mill Co" });
/** An admin whose account claim is userA's account. */
const adminOfA = principal({ subject: "ops", accountId: "acct-a", role: "admin", isAdmin: true, actor: "Ops" });
const root = principal({ subject: "root", accountId: null, role: "admin", isAdmin: true, actor: "root" });

function square(x: number, y: number, size = 1): SourceGeometry {
  const ring: Position[] = [
    [x, y],
    [x + size, y],
    [x + size, y + size],
    [x, y + size],
    [x, y],
  ];
  return { type: "Polygon", coordinates: [ring] };
}

function draft(altId: string, overrides: Partial<SourceDraft> = {}): SourceDraft {
  return {
    altId,
    ...NO_OPTIONAL_DRAFT_FIELDS,
    geometry: square(10, 10),
    startAt: START,
    endAt: END,
    ...overrides,
  };
}

const ids = (records: readonly SourceRecord[]) => records.map((r) => r.id);

type LedgerOptionsSecret = Uint8Array | (() => Promise<Uint8Array>);

const point = (x: number, y: number): SearchArea => ({ type: "Point", coordinates: [x, y] });
const box = (minX: number, minY: number, maxX: number, maxY: number) => ({ minX, minY, maxX, maxY });
const boxArea = (minX: number, minY: number, maxX: number, maxY: number): SearchArea => ({
  type: "Box",
  box: box(minX, minY, maxX, maxY),
});

async function refusal(call: Promise<unknown>): Promise<LedgerError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LedgerError);
  return error as LedgerError;
}

async function expectInvalid(call: Promise<unknown>, violations: Violation[]): Promise<void> {
  const error = await refusal(call);
  expect({ kind: error.kind, message: error.message, violations: error.violations }).toStrictEqual({
    kind: "invalid",
    message: "request is invalid",
    violations,
  });
}

const NOT_THIS_LISTING: Violation = {
  field: "page_token",
  detail:
    "page_token does not belong to this listing: it was made for other filters, another account or " +
    "environment, or was altered; list again without page_token",
};
const NOT_WITH_OFFSET: Violation = {
  field: "page_token",
  detail: "page_token cannot be combined with offset: the token already says where the page starts",
};
const AREA_REQUIRED: Violation = {
  field: "intersects",
  detail: "intersects is required: a Point, a Polygon or a MultiPolygon (or a box over gRPC)",
};

const list = (filters: ListFilterValues = {}, overrides: Partial<ListCommand> = {}): ListCommand => ({
  filters,
  ...overrides,
});
const search = (
  area: SearchArea | null,
  filters: ListFilterValues = {},
  overrides: Partial<ListCommand> = {},
): SearchCommand => ({ area, filters, ...overrides });

/** Every page of a listing, following next_page_token; each page's records and token. */
async function walk(next: (pageToken: string | undefined) => Promise<ListPage>, bound = 1000): Promise<ListPage[]> {
  const pages: ListPage[] = [];
  let token: string | undefined;
  for (;;) {
    const page = await next(token);
    pages.push(page);
    if (page.nextPageToken === null) return pages;
    token = page.nextPageToken;
    if (pages.length > bound) throw new Error("the walk does not end");
  }
}

const STORES: { name: string; open: () => SourceStore }[] = [
  { name: "SQLite :memory:", open: () => openSqliteStore({ path: ":memory:" }) },
  { name: "sandbox store", open: () => createSandboxStore({ ttlMs: 3_600_000 }) },
];

describe.each(STORES)("paging and search over the $name", ({ open }) => {
  let store: SourceStore;
  let clock: number;
  let idSeq: number;

  /** Ids in an order other than creation order, so ties on created_at are broken by id visibly. */
  function ledgerIn(environment: Environment, secret: LedgerOptionsSecret = TEST_SECRET): Ledger {
    return createLedger({
      environment,
      store,
      secret,
      newId: () => `id-${String((++idSeq * 37) % 1000).padStart(4, "0")}`,
      now: () => {
        clock += 1000;
        return clock;
      },
    });
  }

  let production: Ledger;
  let sandbox: Ledger;

  beforeEach(() => {
    store = open();
    clock = T0;
    idSeq = 0;
    production = ledgerIn("production");
    sandbox = ledgerIn("sandbox");
  });

  afterEach(async () => {
    await store.close();
  });

  /** 15 sources of userA in three requests of five (five share each created time), and 3 of userB. */
  async function seed(): Promise<SourceRecord[]> {
    const created: SourceRecord[] = [];
    for (let batch = 0; batch < 3; batch++) {
      const drafts = Array.from({ length: 5 }, (_, k) =>
        draft(`a-${batch}-${k}`, {
          methodology: k % 2 === 0 ? "M-even" : "M-odd",
          attributeType: k % 2 === 0 ? ["BIODIVERSITY"] : ["CARBON_REMOVAL", "WATER_QUALITY"],
          geometry: square(10 + k * 2, 10 + batch * 2),
        }),
      );
      created.push(...(await production.create(userA, { sources: drafts })));
    }
    await production.create(userB, { sources: [draft("b-0"), draft("b-1"), draft("b-2")] });
    return created;
  }

  /** userA's sources in list order. */
  async function allOfA(): Promise<SourceRecord[]> {
    const page = await production.list(userA, list({}, { limit: 1000 }));
    expect(page.nextPageToken).toBeNull();
    return page.records;
  }

  describe("pages and next_page_token", () => {
    it("a page read with the geometry wire bytes asked for continues on one read without them, and back", async () => {
      await seed();
      const asked: (boolean | undefined)[] = [];
      const list0 = store.list.bind(store);
      store.list = (query) => {
        asked.push(query.geometryWire);
        return list0(query);
      };
      const first = await production.list(userA, list({}, { limit: 4, geometryWire: true }));
      const second = await production.list(userA, list({}, { limit: 4, pageToken: first.nextPageToken ?? "" }));
      const third = await production.list(
        userA,
        list({}, { limit: 4, pageToken: second.nextPageToken ?? "", geometryWire: true }),
      );
      expect([...ids(first.records), ...ids(second.records), ...ids(third.records)]).toEqual(
        ids(await allOfA()).slice(0, 12),
      );
      expect(asked.slice(0, 3)).toEqual([true, false, true]);
    });

    it("walks every record once in list order; every page but the last has a token", async () => {
      await seed();
      const all = await allOfA();
      expect(all).toHaveLength(15);
      // Within one request the created time is shared, so the id decides.
      expect(ids(all)).toEqual(
        [...all].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1)).map((r) => r.id),
      );
      for (const limit of [1, 2, 4, 7]) {
        const pages = await walk((pageToken) => production.list(userA, list({}, { limit, pageToken })));
        expect(
          pages.flatMap((p) => ids(p.records)),
          `limit ${limit}`,
        ).toEqual(ids(all));
        expect(pages.slice(0, -1).every((p) => p.records.length === limit && p.nextPageToken !== null)).toBe(true);
        expect(pages.at(-1)?.nextPageToken).toBeNull();
      }
    });

    it("gives no token when exactly limit records were left, nor when fewer", async () => {
      await seed();
      const all = await allOfA();
      const pages = await walk((pageToken) => production.list(userA, list({}, { limit: 5, pageToken })));
      expect(pages.map((p) => p.records.length)).toEqual([5, 5, 5]);
      expect(pages.map((p) => p.nextPageToken === null)).toEqual([false, false, true]);
      expect(pages.flatMap((p) => ids(p.records))).toEqual(ids(all));

      expect((await production.list(userA, list({}, { limit: 15 }))).nextPageToken).toBeNull();
      const fourteen = await production.list(userA, list({}, { limit: 14 }));
      expect(fourteen.nextPageToken).not.toBeNull();
      const last = await production.list(userA, list({}, { limit: 14, pageToken: fourteen.nextPageToken ?? "" }));
      expect(ids(last.records)).toEqual(ids(all.slice(14)));
      expect(last.nextPageToken).toBeNull();
    });

    it("gives no token for an empty listing, and an empty page after the last record", async () => {
      await seed();
      const none = await production.list(userA, list({ methodology: "nobody" }));
      expect(none).toMatchObject({ records: [], nextPageToken: null });
      const all = await allOfA();
      const page = await production.list(userA, list({}, { limit: 3 }));
      const after = await production.list(userA, list({}, { pageToken: page.tokenAfter(all[14]) }));
      expect(after).toMatchObject({ records: [], nextPageToken: null });
    });

    it("lets the limit change from page to page (it is not part of the listing)", async () => {
      await seed();
      const all = await allOfA();
      const first = await production.list(userA, list({}, { limit: 4 }));
      const rest = await production.list(userA, list({}, { limit: 100, pageToken: first.nextPageToken ?? "" }));
      expect(ids(rest.records)).toEqual(ids(all.slice(4)));
      expect(rest.nextPageToken).toBeNull();
    });

    it("resumes after any record of a page with tokenAfter; the last one's is next_page_token", async () => {
      await seed();
      const all = await allOfA();
      const page = await production.list(userA, list({}, { limit: 6 }));
      expect(page.tokenAfter(page.records[5])).toBe(page.nextPageToken);
      for (const k of [0, 3, 5]) {
        const next = await production.list(userA, list({}, { limit: 4, pageToken: page.tokenAfter(page.records[k]) }));
        expect(ids(next.records)).toEqual(ids(all.slice(k + 1, k + 5)));
      }
    });

    it("walks a filtered listing, the token carrying on under the same filters", async () => {
      const created = await seed();
      const even = created.filter((r) => r.methodology === "M-even");
      const pages = await walk((pageToken) =>
        production.list(userA, list({ methodology: "M-even" }, { limit: 2, pageToken })),
      );
      const seen = pages.flatMap((p) => p.records);
      expect(new Set(ids(seen))).toEqual(new Set(ids(even)));
      expect(seen).toHaveLength(even.length);
    });

    it("resumes correctly when the record a token points after has been deleted, and shows later creates", async () => {
      await seed();
      const all = await allOfA();
      const first = await production.list(userA, list({}, { limit: 5 }));
      await production.delete(userA, { key: { by: "id", value: all[4].id } });
      await production.delete(userA, { key: { by: "id", value: all[5].id } });
      const [late] = await production.create(userA, { sources: [draft("late")] });
      const rest = await walk((pageToken) =>
        production.list(userA, list({}, { limit: 5, pageToken: pageToken ?? first.nextPageToken ?? "" })),
      );
      expect(rest.flatMap((p) => ids(p.records))).toEqual([...ids(all.slice(6)), late.id]);
    });

    it("pages an admin's listing across accounts, and within the account it names", async () => {
      await seed();
      const everything = await production.list(root, list({}, { limit: 1000 }));
      expect(everything.records).toHaveLength(18);
      const pages = await walk((pageToken) => production.list(root, list({}, { limit: 4, pageToken })));
      expect(pages.flatMap((p) => ids(p.records))).toEqual(ids(everything.records));
      const ofB = await walk((pageToken) =>
        production.list(root, list({}, { accountId: "acct-b", limit: 2, pageToken })),
      );
      expect(ofB.flatMap((p) => p.records.map((r) => r.accountId))).toEqual(["acct-b", "acct-b", "acct-b"]);
    });
  });

  describe("a token belongs to its listing", () => {
    let token: string;
    beforeEach(async () => {
      await seed();
      const page = await production.list(userA, list({ methodology: "M-odd" }, { limit: 2 }));
      token = page.nextPageToken ?? "";
      expect(token).not.toBe("");
    });

    it("is accepted again by the same caller with the same filters", async () => {
      const page = await production.list(userA, list({ methodology: "M-odd" }, { limit: 2, pageToken: token }));
      expect(page.records).toHaveLength(2);
    });

    it.each<[string, () => Promise<unknown>]>([
      ["other filter values", () => production.list(userA, list({ methodology: "M-even" }, { pageToken: token }))],
      ["no filters", () => production.list(userA, list({}, { pageToken: token }))],
      [
        "one more filter",
        () => production.list(userA, list({ methodology: "M-odd", conflict: false }, { pageToken: token })),
      ],
      ["another account", () => production.list(userB, list({ methodology: "M-odd" }, { pageToken: token }))],
      [
        "an admin naming the same account",
        () => production.list(adminOfA, list({ methodology: "M-odd" }, { accountId: "acct-a", pageToken: token })),
      ],
      [
        "an admin of the same account",
        () => production.list(adminOfA, list({ methodology: "M-odd" }, { pageToken: token })),
      ],
      ["the other environment", () => sandbox.list(userA, list({ methodology: "M-odd" }, { pageToken: token }))],
      [
        "a search with the same filters",
        () =>
          production.search(userA, search(boxArea(-180, -90, 180, 90), { methodology: "M-odd" }, { pageToken: token })),
      ],
      [
        "a ledger with another secret",
        () => ledgerIn("production", OTHER_SECRET).list(userA, list({ methodology: "M-odd" }, { pageToken: token })),
      ],
      [
        "one character changed",
        () =>
          production.list(
            userA,
            list(
              { methodology: "M-odd" },
              { pageToken: `${token.slice(0, 5)}${token[5] === "A" ? "B" : "A"}${token.slice(6)}` },
            ),
          ),
      ],
      ["garbage", () => production.list(userA, list({ methodology: "M-odd" }, { pageToken: "not-a-token" }))],
      ["base64 padding", () => production.list(userA, list({ methodology: "M-odd" }, { pageToken: `${token}=` }))],
    ])("is refused with %s, as page_token", async (_label, call) => {
      await expectInvalid(call(), [NOT_THIS_LISTING]);
    });

    it("is kept by another ledger instance over the same secret (another process, a restart)", async () => {
      const again = ledgerIn("production");
      const page = await again.list(userA, list({ methodology: "M-odd" }, { limit: 2, pageToken: token }));
      expect(page.records).toHaveLength(2);
    });

    it("binds sets of attribute types however they are spelled", async () => {
      const first = await production.list(
        userA,
        list({ attributeTypes: ["WATER_QUALITY", "CARBON_REMOVAL"] }, { limit: 2 }),
      );
      const next = await production.list(
        userA,
        list(
          { attributeTypes: ["CARBON_REMOVAL", "WATER_QUALITY", "CARBON_REMOVAL"] },
          { limit: 2, pageToken: first.nextPageToken ?? "" },
        ),
      );
      expect(next.records).toHaveLength(2);
      await expectInvalid(
        production.list(userA, list({ attributeTypes: ["CARBON_REMOVAL"] }, { pageToken: first.nextPageToken ?? "" })),
        [NOT_THIS_LISTING],
      );
    });

    it("an admin's token is refused for another account scope", async () => {
      const page = await production.list(root, list({}, { limit: 2 }));
      const rootToken = page.nextPageToken ?? "";
      expect((await production.list(root, list({}, { pageToken: rootToken }))).records.length).toBeGreaterThan(0);
      await expectInvalid(production.list(root, list({}, { accountId: "acct-a", pageToken: rootToken })), [
        NOT_THIS_LISTING,
      ]);
      await expectInvalid(production.list(adminOfA, list({}, { pageToken: rootToken })), [NOT_THIS_LISTING]);
      await expectInvalid(production.list(userA, list({}, { pageToken: rootToken })), [NOT_THIS_LISTING]);
    });

    it.each([0, 3])("is refused with offset %i: page_token and offset do not go together", async (offset) => {
      await expectInvalid(production.list(userA, list({ methodology: "M-odd" }, { pageToken: token, offset })), [
        NOT_WITH_OFFSET,
      ]);
      await expectInvalid(production.list(userA, list({ methodology: "M-odd" }, { pageToken: "garbage", offset })), [
        NOT_WITH_OFFSET,
      ]);
    });

    it("is read only once the rest of the listing is valid", async () => {
      await expectInvalid(production.list(userA, list({ methodology: "M-odd" }, { pageToken: "garbage", limit: 0 })), [
        { field: "limit", detail: "limit must be from 1 to 1000, got 0" },
      ]);
    });

    it("an empty page_token is the first page", async () => {
      const page = await production.list(userA, list({ methodology: "M-odd" }, { limit: 2, pageToken: "" }));
      expect(page.nextPageToken).toBe(token);
    });
  });

  describe("search", () => {
    it("pages the sources meeting the area (touching counts), and binds the token to the area", async () => {
      const created = await seed();
      // Sources are the unit squares at (10 + 2k, 10 + 2·batch); the area touches the k = 1 column
      // along x = 13 and the k = 2 column along x = 14, and meets no other.
      const pentagon = (top: number): SearchArea => ({
        type: "Polygon",
        coordinates: [
          [
            [13, 9],
            [14, 9],
            [14, 30],
            [13.5, top],
            [13, 30],
            [13, 9],
          ],
        ],
      });
      const area = pentagon(31);
      const expected = created.filter((r) => r.altId.endsWith("-1") || r.altId.endsWith("-2"));
      expect(expected).toHaveLength(6);
      const pages = await walk((pageToken) => production.search(userA, search(area, {}, { limit: 2, pageToken })));
      expect(new Set(pages.flatMap((p) => ids(p.records)))).toEqual(new Set(ids(expected)));
      expect(pages.flatMap((p) => p.records)).toHaveLength(expected.length);

      const first = pages[0];
      const moved = pentagon(32);
      await expectInvalid(production.search(userA, search(moved, {}, { pageToken: first.nextPageToken ?? "" })), [
        NOT_THIS_LISTING,
      ]);
      await expectInvalid(production.list(userA, list({}, { pageToken: first.nextPageToken ?? "" })), [
        NOT_THIS_LISTING,
      ]);
      await expectInvalid(
        production.search(userA, search(point(13, 11), {}, { pageToken: first.nextPageToken ?? "" })),
        [NOT_THIS_LISTING],
      );
      const again = await production.search(
        userA,
        search(area, {}, { limit: 2, pageToken: first.nextPageToken ?? "" }),
      );
      expect(ids(again.records)).toEqual(ids(pages[1].records));
    });

    it("binds a box area and a bbox filter by their values", async () => {
      await seed();
      const page = await production.search(
        userA,
        search(boxArea(9, 9, 30, 30), { bbox: box(9, 9, 30, 30) }, { limit: 2 }),
      );
      const token = page.nextPageToken ?? "";
      expect(token).not.toBe("");
      const next = await production.search(
        userA,
        search(boxArea(9, 9, 30, 30), { bbox: box(9, 9, 30, 30) }, { limit: 2, pageToken: token }),
      );
      expect(next.records).toHaveLength(2);
      for (const [area, bbox] of [
        [boxArea(9, 9, 30, 31), box(9, 9, 30, 30)],
        [boxArea(9, 9, 30, 30), box(9, 9, 30, 31)],
        [boxArea(9, 9, 30, 30), undefined],
      ] as const) {
        await expectInvalid(production.search(userA, search(area, { bbox }, { pageToken: token })), [NOT_THIS_LISTING]);
      }
    });

    it("is account-scoped like every read", async () => {
      await seed();
      const everywhere = boxArea(-180, -90, 180, 90);
      expect(
        (await production.search(userB, search(everywhere, {}, { limit: 100 }))).records.map((r) => r.accountId),
      ).toEqual(["acct-b", "acct-b", "acct-b"]);
      expect((await production.search(root, search(everywhere, {}, { limit: 100 }))).records).toHaveLength(18);
    });
  });

  describe("validation of bbox and search areas", () => {
    it.each<[string, ReturnType<typeof box>, string]>([
      ["a longitude below -180", box(-181, 0, 1, 1), "bbox (min corner): longitude must be from -180 to 180, got -181"],
      ["a latitude below -90", box(0, -90.5, 1, 1), "bbox (min corner): latitude must be from -90 to 90, got -90.5"],
      [
        "a longitude above 180",
        box(0, 0, 180.5, 1),
        "bbox (max corner): longitude must be from -180 to 180, got 180.5",
      ],
      ["a latitude above 90", box(0, 0, 1, 91), "bbox (max corner): latitude must be from -90 to 90, got 91"],
      ["a NaN", box(Number.NaN, 0, 1, 1), "bbox (min corner) must be finite numbers, got NaN, 0"],
      [
        "an infinity",
        box(0, 0, 1, Number.POSITIVE_INFINITY),
        "bbox (max corner) must be finite numbers, got 1, Infinity",
      ],
      [
        "west beyond east",
        box(170, 0, -170, 1),
        "bbox: minLon 170 is greater than maxLon -170; a box may not cross the antimeridian (search each side with its own box)",
      ],
      ["south beyond north", box(0, 5, 1, 4), "bbox: minLat 5 is greater than maxLat 4"],
    ])("refuses a bbox filter with %s", async (_label, bbox, detail) => {
      await expectInvalid(production.list(userA, list({ bbox })), [{ field: "bbox", detail }]);
      await expectInvalid(sandbox.list(userA, list({ bbox })), [{ field: "bbox", detail }]);
      await expectInvalid(production.search(userA, search(point(0, 0), { bbox })), [{ field: "bbox", detail }]);
    });

    it("accepts the extreme and degenerate boxes", async () => {
      await seed();
      for (const bbox of [
        box(-180, -90, 180, 90),
        box(11, 11, 11, 11),
        box(180, 90, 180, 90),
        box(-180, -90, -180, 90),
      ]) {
        await expect(production.list(userA, list({ bbox }))).resolves.toBeDefined();
        await expect(production.search(userA, search({ type: "Box", box: bbox }))).resolves.toBeDefined();
      }
      for (const [x, y] of [
        [180, 90],
        [-180, -90],
        [0, 0],
      ]) {
        await expect(production.search(userA, search(point(x, y)))).resolves.toBeDefined();
      }
    });

    it.each<[string, SearchArea, Violation[]]>([
      [
        "a point's longitude",
        point(181, 0),
        [{ field: "intersects", coordinates: [], detail: "the point: longitude must be from -180 to 180, got 181" }],
      ],
      [
        "a point's latitude",
        point(0, -91),
        [{ field: "intersects", coordinates: [], detail: "the point: latitude must be from -90 to 90, got -91" }],
      ],
      [
        "a point that is not finite",
        point(Number.NaN, 0),
        [{ field: "intersects", coordinates: [], detail: "the point must be finite numbers, got NaN, 0" }],
      ],
      [
        "a point at infinity",
        point(0, Number.NEGATIVE_INFINITY),
        [{ field: "intersects", coordinates: [], detail: "the point must be finite numbers, got 0, -Infinity" }],
      ],
      [
        "a box's corner",
        boxArea(-200, 0, 1, 1),
        [{ field: "intersects", detail: "the box (min corner): longitude must be from -180 to 180, got -200" }],
      ],
      [
        "a box's other corner",
        boxArea(0, 0, 1, 95),
        [{ field: "intersects", detail: "the box (max corner): latitude must be from -90 to 90, got 95" }],
      ],
      [
        "a box across the antimeridian",
        boxArea(179, 0, -179, 1),
        [
          {
            field: "intersects",
            detail:
              "the box: minLon 179 is greater than maxLon -179; a box may not cross the antimeridian " +
              "(search each side with its own box)",
          },
        ],
      ],
      [
        "a box upside down",
        boxArea(0, 1, 1, 0),
        [{ field: "intersects", detail: "the box: minLat 1 is greater than maxLat 0" }],
      ],
      [
        "a self-intersecting polygon",
        {
          type: "Polygon",
          coordinates: [
            [
              [0, 0],
              [1, 1],
              [1, 0],
              [0, 1],
              [0, 0],
            ],
          ],
        },
        [
          {
            field: "intersects",
            geometryKind: "polygon",
            coordinates: [0],
            detail: "the exterior ring self-intersects near (0.5, 0.5)",
          },
        ],
      ],
      [
        "a ring that is not closed",
        {
          type: "Polygon",
          coordinates: [
            [
              [0, 0],
              [1, 0],
              [1, 1],
              [0, 1],
            ],
          ],
        },
        [
          {
            field: "intersects",
            geometryKind: "polygon",
            coordinates: [0],
            detail: "the exterior ring is not closed: its last position (0, 1) differs from its first (0, 0)",
          },
        ],
      ],
      [
        "a polygon's positions out of range",
        {
          type: "Polygon",
          coordinates: [
            [
              [0, 0],
              [200, 0],
              [200, 1],
              [0, 1],
              [0, 0],
            ],
          ],
        },
        [
          {
            field: "intersects",
            geometryKind: "polygon",
            coordinates: [0, 1],
            detail: "position 1 of the exterior ring is out of range at (200, 0): longitude must be within -180..180",
          },
          {
            field: "intersects",
            geometryKind: "polygon",
            coordinates: [0, 2],
            detail: "position 2 of the exterior ring is out of range at (200, 1): longitude must be within -180..180",
          },
        ],
      ],
      [
        "a polygon without rings",
        { type: "Polygon", coordinates: [] },
        [
          {
            field: "intersects",
            geometryKind: "polygon",
            coordinates: [],
            detail: "Polygon has no rings; an exterior ring is required",
          },
        ],
      ],
      [
        "a MultiPolygon whose parts overlap",
        {
          type: "MultiPolygon",
          coordinates: [
            [
              [
                [0, 0],
                [1, 0],
                [1, 1],
                [0, 1],
                [0, 0],
              ],
            ],
            [
              [
                [0.5, 0.5],
                [2, 0.5],
                [2, 2],
                [0.5, 2],
                [0.5, 0.5],
              ],
            ],
          ],
        },
        [
          {
            field: "intersects",
            geometryKind: "multi_polygon",
            coordinates: [1],
            detail: "polygons 0 and 1 overlap or share an edge near (1, 0.5); dissolve them into one polygon",
          },
        ],
      ],
      [
        "a MultiPolygon with a self-intersecting part",
        {
          type: "MultiPolygon",
          coordinates: [
            [
              [
                [0, 0],
                [1, 0],
                [1, 1],
                [0, 1],
                [0, 0],
              ],
            ],
            [
              [
                [5, 5],
                [6, 6],
                [6, 5],
                [5, 6],
                [5, 5],
              ],
            ],
          ],
        },
        [
          {
            field: "intersects",
            geometryKind: "multi_polygon",
            coordinates: [1, 0],
            detail: "the exterior ring of polygon 1 self-intersects near (5.5, 5.5)",
          },
        ],
      ],
    ])("refuses a search area with %s, at intersects", async (_label, area, violations) => {
      await expectInvalid(production.search(userA, search(area)), violations);
      await expectInvalid(sandbox.search(userA, search(area)), violations);
    });

    it("requires an area to search", async () => {
      await expectInvalid(production.search(userA, search(null)), [AREA_REQUIRED]);
      await expectInvalid(sandbox.search(root, search(null, {}, { limit: 5 })), [AREA_REQUIRED]);
    });

    it("reports every violation at once: the area's first, then the listing's in order", async () => {
      await expectInvalid(
        production.search(
          userA,
          search(
            null,
            { outcomeReportingYear: 5, bbox: box(0, 5, 1, 4), methodology: "" },
            { accountId: "acct-x", limit: 0, offset: -1, pageToken: "garbage" },
          ),
        ),
        [
          AREA_REQUIRED,
          { field: "account_id", detail: "account_id is accepted only from admin tokens" },
          { field: "methodology", detail: "methodology must not be empty" },
          { field: "outcome_reporting_year", detail: "outcome_reporting_year must be a year from 1000 to 9999, got 5" },
          { field: "bbox", detail: "bbox: minLat 5 is greater than maxLat 4" },
          { field: "limit", detail: "limit must be from 1 to 1000, got 0" },
          { field: "offset", detail: "offset must be 0 or more, got -1" },
          NOT_WITH_OFFSET,
        ],
      );
      await expectInvalid(
        production.search(userA, search(point(200, 0), { bbox: box(-181, 0, 0, 0) }, { limit: 1001 })),
        [
          { field: "intersects", coordinates: [], detail: "the point: longitude must be from -180 to 180, got 200" },
          { field: "bbox", detail: "bbox (min corner): longitude must be from -180 to 180, got -181" },
          { field: "limit", detail: "limit must be from 1 to 1000, got 1001" },
        ],
      );
    });

    it("puts the adapter's violations first, then the ledger's", async () => {
      const read: Violation = {
        field: "conflict",
        detail: "conflict must be true or false, got 1",
        pointer: "/conflict",
      };
      await expectInvalid(production.search(userA, { ...search(null), readViolations: [read] }), [read, AREA_REQUIRED]);
    });
  });
});

describe("the secret, asked for when first needed", () => {
  let store: SourceStore;
  beforeEach(() => {
    store = openSqliteStore({ path: ":memory:" });
  });
  afterEach(async () => {
    await store.close();
  });

  function ledgerWith(secret: () => Promise<Uint8Array>): Ledger {
    let n = 0;
    return createLedger({ environment: "production", store, secret, newId: () => `id-${++n}`, now: () => T0 });
  }

  it("is asked for once, by the first valid listing, and shared by concurrent ones", async () => {
    let calls = 0;
    const ledger = ledgerWith(async () => {
      calls += 1;
      return store.ledgerSecret();
    });
    await ledger.create(userA, { sources: [draft("a"), draft("b"), draft("c")] });
    expect(calls).toBe(0);
    await expectInvalid(ledger.list(userA, list({}, { limit: 0 })), [
      { field: "limit", detail: "limit must be from 1 to 1000, got 0" },
    ]);
    expect(calls).toBe(0);
    await Promise.all(Array.from({ length: 5 }, () => ledger.list(userA, list({}, { limit: 1 }))));
    expect(calls).toBe(1);
    const first = await ledger.list(userA, list({}, { limit: 1 }));
    await ledger.list(userA, list({}, { limit: 1, pageToken: first.nextPageToken ?? "" }));
    await ledger.search(userA, search(point(10.5, 10.5)));
    expect(calls).toBe(1);
  });

  it("answers unavailable while the secret cannot be had, and asks again on the next call", async () => {
    const failure = new StoreUnavailableError("secret: connection refused at 10.0.0.5");
    let calls = 0;
    const ledger = ledgerWith(async () => {
      calls += 1;
      if (calls === 1) throw failure;
      return store.ledgerSecret();
    });
    const error = await refusal(ledger.list(userA, list()));
    expect({ kind: error.kind, message: error.message, violations: error.violations }).toStrictEqual({
      kind: "unavailable",
      message: "the store is unavailable; retry later",
      violations: [],
    });
    expect(error.cause).toBe(failure);
    expect(calls).toBe(1);

    await ledger.create(userA, { sources: [draft("a"), draft("b")] });
    const page = await ledger.list(userA, list({}, { limit: 1 }));
    expect(page.records).toHaveLength(1);
    expect(calls).toBe(2);
    const next = await ledger.list(userA, list({}, { limit: 1, pageToken: page.nextPageToken ?? "" }));
    expect(next.records).toHaveLength(1);
    expect(next.nextPageToken).toBeNull();
    expect(calls).toBe(2);
  });

  it("shares one failure between concurrent calls, then recovers", async () => {
    let calls = 0;
    let fail: (error: unknown) => void = () => {};
    const ledger = ledgerWith(() => {
      calls += 1;
      if (calls === 1) {
        return new Promise((_, reject) => {
          fail = reject;
        });
      }
      return store.ledgerSecret();
    });
    const pending = Array.from({ length: 3 }, () => refusal(ledger.list(userA, list())));
    await Promise.resolve();
    fail(new StoreUnavailableError("down"));
    for (const error of await Promise.all(pending)) expect(error.kind).toBe("unavailable");
    expect(calls).toBe(1);
    await expect(ledger.list(userA, list())).resolves.toMatchObject({ records: [], nextPageToken: null });
    expect(calls).toBe(2);
  });

  it("keys tokens so that a ledger over the same store's secret reads them (two processes)", async () => {
    const one = ledgerWith(() => store.ledgerSecret());
    const two = ledgerWith(() => store.ledgerSecret());
    await one.create(userA, { sources: [draft("a"), draft("b")] });
    const page = await one.list(userA, list({}, { limit: 1 }));
    const next = await two.list(userA, list({}, { limit: 1, pageToken: page.nextPageToken ?? "" }));
    expect(next.records).toHaveLength(1);
    expect(next.records[0].id).not.toBe(page.records[0].id);
  });
});
