/**
 * The transport-free ledger core (src/ledger/ledger.ts) through its four functions, over the real
 * sandbox store and the embedded SQLite store on `:memory:`: stamping, the account and admin rules
 * of docs/api.md §2.6, alt_id uniqueness, list filters and paging, get/delete, the adapter's
 * violations, and store failures as the ledger's kinds.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import type { CreateCommand, ListCommand, SourceDraft } from "../../src/ledger/commands.js";
import { LedgerError, type LedgerErrorKind } from "../../src/ledger/errors.js";
import { createLedger, type Ledger } from "../../src/ledger/ledger.js";
import type { Violation } from "../../src/ledger/violation.js";
import type { Environment } from "../../src/model/list-query.js";
import type { Principal } from "../../src/model/principal.js";
import type { SourceRecord } from "../../src/model/records.js";
import { CapacityExceededError, type SourceStore, StoreUnavailableError } from "../../src/store/port.js";
import { createSandboxStore } from "../../src/store/sandbox/index.js";
import { openSqliteStore } from "../../src/store/sqlite/index.js";
import { NO_OPTIONAL_DRAFT_FIELDS } from "../support/source-records.js";

/** Page tokens are keyed by it; a test ledger's tokens need no other. */
const TEST_SECRET = new Uint8Array(32).fill(7);
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
const adminWithAccount = principal({
  subject: "ops",
  accountId: "acct-ops",
  role: "admin",
  isAdmin: true,
  actor: "Ops Console",
});
const adminWithoutAccount = principal({
  subject: "root",
  accountId: null,
  role: "admin",
  isAdmin: true,
  actor: "root",
});

/** A closed square of `size` degrees at (x, y); each alt_id gets its own spot unless told. */
function square(x: number, y: number, size = 0.01): SourceGeometry {
  const ring: Position[] = [
    [x, y],
    [x + size, y],
    [x + size, y + size],
    [x, y + size],
    [x, y],
  ];
  return { type: "Polygon", coordinates: [ring] };
}

let spot = 0;
function draft(altId: string, overrides: Partial<SourceDraft> = {}): SourceDraft {
  spot += 1;
  return {
    altId,
    ...NO_OPTIONAL_DRAFT_FIELDS,
    geometry: square((spot % 300) * 0.5 - 150, Math.floor(spot / 300) * 0.5),
    startAt: START,
    endAt: END,
    ...overrides,
  };
}

/** The plain fields of a record (the SQLite store adds a hidden geometryJson and a lazy geometry). */
const plain = (record: SourceRecord) => ({ ...record });

/** The LedgerError `call` rejects with; fails the test when it resolves or throws anything else. */
async function refusal(call: Promise<unknown>): Promise<LedgerError> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LedgerError);
  return error as LedgerError;
}

async function expectRefused(
  call: Promise<unknown>,
  kind: LedgerErrorKind,
  message: string,
  violations: Violation[] = [],
): Promise<LedgerError> {
  const error = await refusal(call);
  expect({ kind: error.kind, message: error.message, violations: error.violations }).toStrictEqual({
    kind,
    message,
    violations,
  });
  return error;
}

const noFilters = (overrides: Partial<ListCommand> = {}): ListCommand => ({ filters: {}, ...overrides });

const STORES: { name: string; open: () => SourceStore }[] = [
  { name: "sandbox store", open: () => createSandboxStore({ ttlMs: 3_600_000 }) },
  { name: "SQLite :memory:", open: () => openSqliteStore({ path: ":memory:" }) },
];

describe.each(STORES)("ledger over the $name", ({ open }) => {
  let store: SourceStore;
  let clock: number;
  let clockReads: number;
  let idSeq: number;

  /** A ledger in `environment` over this test's store, with ids id-0001… and a clock stepping 1 s per read. */
  function ledgerIn(environment: Environment): Ledger {
    return createLedger({
      environment,
      store,
      secret: TEST_SECRET,
      newId: () => `id-${String(++idSeq).padStart(4, "0")}`,
      now: () => {
        clockReads += 1;
        const at = clock;
        clock += 1000;
        return at;
      },
    });
  }

  let production: Ledger;
  let sandbox: Ledger;

  beforeEach(() => {
    store = open();
    clock = T0;
    clockReads = 0;
    idSeq = 0;
    production = ledgerIn("production");
    sandbox = ledgerIn("sandbox");
  });

  afterEach(async () => {
    await store.close();
  });

  /** Every source in the store, as an admin without an account claim sees them. */
  async function everything(): Promise<SourceRecord[]> {
    return (await production.list(adminWithoutAccount, noFilters({ limit: 1000 }))).records;
  }

  describe("create", () => {
    it("stamps ids from newId, the account, created_by/updated_by from the actor, and one time from now", async () => {
      const full = draft("north-40", {
        methodology: "VM0042",
        tags: ["storage"],
        stewardId: "steward-1",
        projectId: "prj-7",
        outcomeReportingYear: 2024,
        sourceType: "FIELD",
        attributeType: ["CARBON_REMOVAL"],
        geometrySource: "CUSTODIAN_DRAWN",
      });
      const bare = draft("mill");

      const records = await production.create(userA, { sources: [full, bare] });

      expect(clockReads).toBe(1);
      expect(records.map(plain)).toStrictEqual([
        {
          id: "id-0001",
          accountId: "acct-a",
          altId: "north-40",
          methodology: "VM0042",
          tags: ["storage"],
          stewardId: "steward-1",
          projectId: "prj-7",
          outcomeReportingYear: 2024,
          sourceType: "FIELD",
          attributeType: ["CARBON_REMOVAL"],
          geometrySource: "CUSTODIAN_DRAWN",
          geometry: full.geometry,
          startAt: START,
          endAt: END,
          createdBy: "Farm Co",
          updatedBy: "Farm Co",
          createdAt: T0,
          updatedAt: T0,
          conflict: false,
          unepOverlap: null,
        },
        {
          id: "id-0002",
          accountId: "acct-a",
          altId: "mill",
          methodology: null,
          tags: [],
          stewardId: null,
          projectId: null,
          outcomeReportingYear: null,
          sourceType: null,
          attributeType: [],
          geometrySource: null,
          geometry: bare.geometry,
          startAt: START,
          endAt: END,
          createdBy: "Farm Co",
          updatedBy: "Farm Co",
          createdAt: T0,
          updatedAt: T0,
          conflict: false,
          unepOverlap: null,
        },
      ]);
      expect(plain(await production.get(userA, { id: "id-0001" }))).toStrictEqual(plain(records[0]));
      expect((await production.list(userA, noFilters())).records.map(plain)).toStrictEqual(records.map(plain));
    });

    it("gives the next request the clock's next time", async () => {
      await production.create(userA, { sources: [draft("first")] });
      const [second] = await production.create(userA, { sources: [draft("second")] });
      expect([second.id, second.createdAt, second.updatedAt]).toEqual(["id-0002", T0 + 1000, T0 + 1000]);
    });

    it("refuses account_id from a non-admin, even naming its own account, and stores nothing", async () => {
      await expectRefused(
        production.create(userA, { accountId: "acct-a", sources: [draft("a")] }),
        "invalid",
        "request is invalid",
        [{ field: "account_id", detail: "account_id is accepted only from admin tokens" }],
      );
      expect(await everything()).toEqual([]);
      expect(idSeq).toBe(0);
    });

    it("creates an admin's sources in the account it names, with the admin as the actor", async () => {
      const [record] = await production.create(adminWithAccount, { accountId: "acct-b", sources: [draft("x")] });
      expect([record.accountId, record.createdBy, record.updatedBy]).toEqual(["acct-b", "Ops Console", "Ops Console"]);
      expect((await production.list(userB, noFilters())).records.map((r) => r.id)).toEqual([record.id]);
    });

    it("creates an admin's sources in its own account when it names none", async () => {
      const [record] = await production.create(adminWithAccount, { sources: [draft("x")] });
      expect(record.accountId).toBe("acct-ops");
    });

    it("makes an admin without an account claim name one", async () => {
      await expectRefused(
        production.create(adminWithoutAccount, { sources: [draft("x")] }),
        "invalid",
        "request is invalid",
        [
          {
            field: "account_id",
            detail: "an admin token without an account claim must name the target account with account_id",
          },
        ],
      );
      const [record] = await production.create(adminWithoutAccount, { accountId: "acct-b", sources: [draft("x")] });
      expect([record.accountId, record.createdBy]).toEqual(["acct-b", "root"]);
    });

    it("applies the text rule to an admin's account_id", async () => {
      await expectRefused(
        production.create(adminWithAccount, { accountId: "", sources: [draft("x")] }),
        "invalid",
        "request is invalid",
        [{ field: "account_id", detail: "account_id must not be empty" }],
      );
      await expectRefused(
        production.create(adminWithAccount, { accountId: "a".repeat(257), sources: [draft("x")] }),
        "invalid",
        "request is invalid",
        [{ field: "account_id", detail: "account_id must be at most 256 characters, got 257" }],
      );
    });

    it("lists the account violation before every source violation, and stores nothing", async () => {
      await expectRefused(
        production.create(userA, { accountId: "acct-b", sources: [draft("ok"), draft("", { endAt: START })] }),
        "invalid",
        "request is invalid",
        [
          { field: "account_id", detail: "account_id is accepted only from admin tokens" },
          { source: 1, field: "alt_id", detail: "alt_id is required" },
          { source: 1, field: "end_at", detail: "end_at must be after start_at (times are kept to the millisecond)" },
        ],
      );
      expect(await everything()).toEqual([]);
    });

    it("refuses a request with no sources", async () => {
      await expectRefused(production.create(userA, { sources: [] }), "invalid", "request is invalid", [
        { field: "sources", detail: "at least one source is required" },
      ]);
    });

    it("refuses an alt_id the account already uses as already_exists at the clashing source, storing nothing", async () => {
      await production.create(userA, { sources: [draft("a"), draft("b")] });

      await expectRefused(
        production.create(userA, { sources: [draft("c"), draft("b"), draft("d"), draft("a")] }),
        "already_exists",
        "alt_id already used",
        [
          { source: 1, field: "alt_id", detail: 'alt_id "b" is already used by a source of this account' },
          { source: 3, field: "alt_id", detail: 'alt_id "a" is already used by a source of this account' },
        ],
      );
      expect((await everything()).map((r) => r.altId)).toEqual(["a", "b"]);
    });

    it("lets another account, or the same account after a delete, use the alt_id", async () => {
      const [a] = await production.create(userA, { sources: [draft("shared")] });
      const [b] = await production.create(userB, { sources: [draft("shared")] });
      expect([a.accountId, b.accountId]).toEqual(["acct-a", "acct-b"]);
      await production.delete(userA, { key: { by: "alt_id", value: "shared" } });
      const [again] = await production.create(userA, { sources: [draft("shared")] });
      expect(again.altId).toBe("shared");
    });

    it("reports an alt_id repeated within the request as invalid, not already_exists", async () => {
      await expectRefused(
        production.create(userA, { sources: [draft("r"), draft("r")] }),
        "invalid",
        "request is invalid",
        [{ source: 1, field: "alt_id", detail: 'alt_id "r" repeats source 0 of this request' }],
      );
    });
  });

  describe("list", () => {
    async function seed(): Promise<SourceRecord[]> {
      return production.create(userA, {
        sources: [
          draft("s0", {
            methodology: "VM0042",
            stewardId: "st-1",
            projectId: "p-1",
            outcomeReportingYear: 2024,
            sourceType: "FIELD",
            attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
            geometrySource: "CUSTODIAN_DRAWN",
          }),
          draft("s1", {
            methodology: "VM0042",
            stewardId: "st-2",
            projectId: "p-1",
            outcomeReportingYear: 2025,
            sourceType: "SITE",
            attributeType: ["BIODIVERSITY"],
            geometrySource: "DERIVED",
          }),
          draft("s2", { methodology: "vm0042", attributeType: ["WATER_QUALITY"] }),
          draft("s3"),
        ],
      });
    }

    const altIds = (records: SourceRecord[]) => records.map((r) => r.altId);

    it("applies each filter by equality, and several with AND", async () => {
      await seed();
      const list = async (filters: ListCommand["filters"]) =>
        altIds((await production.list(userA, { filters })).records);
      expect(await list({})).toEqual(["s0", "s1", "s2", "s3"]);
      expect(await list({ methodology: "VM0042" })).toEqual(["s0", "s1"]);
      expect(await list({ methodology: "vm0042" })).toEqual(["s2"]);
      expect(await list({ stewardId: "st-2" })).toEqual(["s1"]);
      expect(await list({ projectId: "p-1" })).toEqual(["s0", "s1"]);
      expect(await list({ outcomeReportingYear: 2024 })).toEqual(["s0"]);
      expect(await list({ sourceType: "SITE" })).toEqual(["s1"]);
      expect(await list({ geometrySource: "CUSTODIAN_DRAWN" })).toEqual(["s0"]);
      expect(await list({ projectId: "p-1", outcomeReportingYear: 2025 })).toEqual(["s1"]);
      expect(await list({ methodology: "VM0042", sourceType: "DEVICE" })).toEqual([]);
    });

    it("matches attribute types by ANY, lists a source once, and ignores repeats and an empty list", async () => {
      await seed();
      const list = async (attributeTypes: string[]) =>
        altIds((await production.list(userA, { filters: { attributeTypes } })).records);
      expect(await list(["BIODIVERSITY"])).toEqual(["s0", "s1"]);
      expect(await list(["CARBON_REMOVAL", "BIODIVERSITY"])).toEqual(["s0", "s1"]);
      expect(await list(["WATER_QUALITY", "CARBON_REMOVAL", "WATER_QUALITY"])).toEqual(["s0", "s2"]);
      expect(await list(["CI_SCORE"])).toEqual([]);
      expect(await list([])).toEqual(["s0", "s1", "s2", "s3"]);
    });

    it("orders by created_at, then id, and pages with limit 100 and offset 0 by default", async () => {
      const sources = Array.from({ length: 101 }, (_, i) => draft(`p${i}`));
      await production.create(userA, { sources });
      const all = (await production.list(userA, noFilters())).records;
      expect(all).toHaveLength(100);
      expect(all[0].altId).toBe("p0");
      expect(all[99].altId).toBe("p99");
      expect(altIds((await production.list(userA, noFilters({ offset: 100 }))).records)).toEqual(["p100"]);
      expect(altIds((await production.list(userA, noFilters({ limit: 2, offset: 99 }))).records)).toEqual([
        "p99",
        "p100",
      ]);
      expect((await production.list(userA, noFilters({ offset: 101 }))).records).toEqual([]);
      expect((await production.list(userA, noFilters({ limit: 1000 }))).records).toHaveLength(101);
      expect(altIds((await production.list(userA, noFilters({ limit: 1 }))).records)).toEqual(["p0"]);
    });

    it("lists an earlier request before a later one", async () => {
      // Ids run backwards, so only created_at can put "early" first.
      const backwards = createLedger({
        environment: "production",
        store,
        secret: TEST_SECRET,
        newId: (() => {
          let n = 10;
          return () => `id-${--n}`;
        })(),
        now: (() => {
          let t = T0;
          return () => (t += 1000);
        })(),
      });
      await backwards.create(userA, { sources: [draft("early")] });
      await backwards.create(userA, { sources: [draft("late")] });
      expect(altIds((await backwards.list(userA, noFilters())).records)).toEqual(["early", "late"]);
      expect((await backwards.list(userA, noFilters())).records.map((r) => r.id)).toEqual(["id-9", "id-8"]);
    });

    it("reports every bad value at once, in proto order then limit and offset, and reads nothing", async () => {
      await seed();
      await expectRefused(
        production.list(userA, {
          accountId: "acct-a",
          filters: {
            methodology: "",
            stewardId: "s".repeat(257),
            outcomeReportingYear: 999,
            sourceType: "field",
            attributeTypes: ["BIODIVERSITY", "nope"],
            geometrySource: "DRAWN",
          },
          limit: 0,
          offset: -1,
        }),
        "invalid",
        "request is invalid",
        [
          { field: "account_id", detail: "account_id is accepted only from admin tokens" },
          { field: "methodology", detail: "methodology must not be empty" },
          { field: "steward_id", detail: "steward_id must be at most 256 characters, got 257" },
          {
            field: "outcome_reporting_year",
            detail: "outcome_reporting_year must be a year from 1000 to 9999, got 999",
          },
          {
            field: "source_type",
            detail:
              'source_type must be one of FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE (exact, upper case), got "field"',
          },
          {
            field: "attribute_type",
            index: 1,
            detail:
              'attribute_type must be one of CARBON_REMOVAL, CARBON_AVOIDANCE, CI_SCORE, BIODIVERSITY, RENEWABLE_ENERGY, WATER_QUALITY, WATER_QUANTITY (exact, upper case), got "nope"',
          },
          {
            field: "geometry_source",
            detail:
              'geometry_source must be one of CUSTODIAN_DRAWN, AUTHORITATIVE_GIS, EXTERNAL_REGISTRY, DERIVED (exact, upper case), got "DRAWN"',
          },
          { field: "limit", detail: "limit must be from 1 to 1000, got 0" },
          { field: "offset", detail: "offset must be 0 or more, got -1" },
        ],
      );
    });

    it("accepts limit 1 and 1000 and refuses 1001", async () => {
      await seed();
      expect((await production.list(userA, noFilters({ limit: 1000 }))).records).toHaveLength(4);
      await expectRefused(production.list(userA, noFilters({ limit: 1001 })), "invalid", "request is invalid", [
        { field: "limit", detail: "limit must be from 1 to 1000, got 1001" },
      ]);
    });

    it("refuses the id filter in production, and applies alt_id there (docs/api.md §13)", async () => {
      const [record] = await seed();
      await expectRefused(
        production.list(userA, { filters: { id: record.id, altId: "s0" } }),
        "invalid",
        "request is invalid",
        [{ field: "id", detail: "the id filter exists only in the sandbox" }],
      );
      expect(altIds((await production.list(userA, { filters: { altId: "s0" } })).records)).toEqual(["s0"]);
      expect((await production.list(userB, { filters: { altId: "s0" } })).records).toEqual([]);
    });

    it("accepts the id and alt_id filters in the sandbox, by exact equality and with other filters", async () => {
      const records = await sandbox.create(userA, {
        sources: [draft("s0", { methodology: "M" }), draft("s1", { methodology: "M" }), draft("S1")],
      });
      const list = async (filters: ListCommand["filters"]) => altIds((await sandbox.list(userA, { filters })).records);
      expect(await list({ id: records[1].id })).toEqual(["s1"]);
      expect(await list({ altId: "s1" })).toEqual(["s1"]);
      expect(await list({ altId: "S1" })).toEqual(["S1"]);
      expect(await list({ altId: "s1", methodology: "M" })).toEqual(["s1"]);
      expect(await list({ altId: "S1", methodology: "M" })).toEqual([]);
      expect(await list({ id: records[0].id, altId: "s1" })).toEqual([]);
      await expectRefused(sandbox.list(userA, { filters: { id: "", altId: "" } }), "invalid", "request is invalid", [
        { field: "id", detail: "id must not be empty" },
        { field: "alt_id", detail: "alt_id must not be empty" },
      ]);
    });

    it("never shows a non-admin another account's source", async () => {
      const [a] = await sandbox.create(userA, { sources: [draft("mine", { methodology: "M" })] });
      const [b] = await sandbox.create(userB, { sources: [draft("theirs", { methodology: "M" })] });
      expect(altIds((await sandbox.list(userA, noFilters())).records)).toEqual(["mine"]);
      expect(altIds((await sandbox.list(userB, noFilters())).records)).toEqual(["theirs"]);
      expect((await sandbox.list(userA, { filters: { id: b.id } })).records).toEqual([]);
      expect((await sandbox.list(userA, { filters: { altId: "theirs" } })).records).toEqual([]);
      expect(altIds((await sandbox.list(userA, { filters: { methodology: "M" } })).records)).toEqual(["mine"]);
      expect(a.accountId).toBe("acct-a");
    });

    it("shows an admin every account without account_id and one account with it", async () => {
      await production.create(userA, { sources: [draft("a1")] });
      await production.create(userB, { sources: [draft("b1")] });
      await production.create(adminWithAccount, { sources: [draft("o1")] });
      expect(altIds((await production.list(adminWithAccount, noFilters())).records)).toEqual(["a1", "b1", "o1"]);
      expect(altIds((await production.list(adminWithoutAccount, noFilters())).records)).toEqual(["a1", "b1", "o1"]);
      expect(altIds((await production.list(adminWithAccount, noFilters({ accountId: "acct-b" }))).records)).toEqual([
        "b1",
      ]);
      expect((await production.list(adminWithoutAccount, noFilters({ accountId: "acct-none" }))).records).toEqual([]);
      await expectRefused(
        production.list(adminWithAccount, noFilters({ accountId: "" })),
        "invalid",
        "request is invalid",
        [{ field: "account_id", detail: "account_id must not be empty" }],
      );
    });
  });

  describe("get and delete", () => {
    it("gets a source of the caller's account and answers not_found for another account's", async () => {
      const [a] = await production.create(userA, { sources: [draft("a")] });
      expect(plain(await production.get(userA, { id: a.id }))).toStrictEqual(plain(a));
      await expectRefused(production.get(userB, { id: a.id }), "not_found", `source "${a.id}" not found`);
      await expectRefused(production.get(userA, { id: "id-9999" }), "not_found", 'source "id-9999" not found');
    });

    it("lets an admin get any account's source", async () => {
      const [a] = await production.create(userA, { sources: [draft("a")] });
      expect((await production.get(adminWithAccount, { id: a.id })).accountId).toBe("acct-a");
      expect((await production.get(adminWithoutAccount, { id: a.id })).accountId).toBe("acct-a");
    });

    it("requires an id to get", async () => {
      await expectRefused(production.get(userA, { id: "" }), "invalid", "request is invalid", [
        { field: "id", detail: "id is required" },
      ]);
    });

    it("deletes by id within the caller's account only; a second delete is not_found", async () => {
      const [a] = await production.create(userA, { sources: [draft("a")] });
      await expectRefused(
        production.delete(userB, { key: { by: "id", value: a.id } }),
        "not_found",
        `source "${a.id}" not found`,
      );
      expect(await everything()).toHaveLength(1);
      await production.delete(userA, { key: { by: "id", value: a.id } });
      expect(await everything()).toEqual([]);
      await expectRefused(
        production.delete(userA, { key: { by: "id", value: a.id } }),
        "not_found",
        `source "${a.id}" not found`,
      );
    });

    it("deletes by alt_id within the caller's account only", async () => {
      await production.create(userA, { sources: [draft("x")] });
      await production.create(userB, { sources: [draft("x")] });
      await production.delete(userB, { key: { by: "alt_id", value: "x" } });
      expect((await everything()).map((r) => r.accountId)).toEqual(["acct-a"]);
      await expectRefused(
        production.delete(userB, { key: { by: "alt_id", value: "x" } }),
        "not_found",
        'source with alt_id "x" not found',
      );
    });

    it("makes an admin name the account to delete by alt_id; a wrong account is not_found", async () => {
      await production.create(userA, { sources: [draft("x")] });
      for (const admin of [adminWithAccount, adminWithoutAccount]) {
        await expectRefused(
          production.delete(admin, { key: { by: "alt_id", value: "x" } }),
          "invalid",
          "request is invalid",
          [{ field: "account_id", detail: "admin tokens must name the account with account_id to delete by alt_id" }],
        );
      }
      await expectRefused(
        production.delete(adminWithAccount, { key: { by: "alt_id", value: "x" }, accountId: "acct-b" }),
        "not_found",
        'source with alt_id "x" not found',
      );
      expect(await everything()).toHaveLength(1);
      await production.delete(adminWithoutAccount, { key: { by: "alt_id", value: "x" }, accountId: "acct-a" });
      expect(await everything()).toEqual([]);
    });

    it("lets an admin delete by id in any account, or only in the one it names", async () => {
      const [a, b] = await production.create(userA, { sources: [draft("a"), draft("b")] });
      await expectRefused(
        production.delete(adminWithAccount, { key: { by: "id", value: a.id }, accountId: "acct-b" }),
        "not_found",
        `source "${a.id}" not found`,
      );
      await production.delete(adminWithAccount, { key: { by: "id", value: a.id }, accountId: "acct-a" });
      await production.delete(adminWithoutAccount, { key: { by: "id", value: b.id } });
      expect(await everything()).toEqual([]);
    });

    it("refuses account_id from a non-admin on delete", async () => {
      const [a] = await production.create(userA, { sources: [draft("a")] });
      await expectRefused(
        production.delete(userA, { key: { by: "id", value: a.id }, accountId: "acct-a" }),
        "invalid",
        "request is invalid",
        [{ field: "account_id", detail: "account_id is accepted only from admin tokens" }],
      );
      expect(await everything()).toHaveLength(1);
    });

    it("requires a key, and a non-empty one", async () => {
      await expectRefused(production.delete(userA, { key: null }), "invalid", "request is invalid", [
        { field: "id", detail: "id or alt_id is required" },
      ]);
      await expectRefused(
        production.delete(userA, { key: { by: "alt_id", value: "" } }),
        "invalid",
        "request is invalid",
        [{ field: "alt_id", detail: "alt_id must not be empty" }],
      );
      await expectRefused(production.delete(userA, { key: { by: "id", value: "" } }), "invalid", "request is invalid", [
        { field: "id", detail: "id must not be empty" },
      ]);
    });
  });

  describe("the adapter's readViolations", () => {
    const unknownType: Violation = {
      source: 0,
      field: "source_type",
      detail: "source_type 99 is not one of FIELD, FACILITY, DEVICE, PROGRAM, JURISDICTIONAL, SITE",
    };

    it("block a create that is otherwise valid, and nothing is stored", async () => {
      await expectRefused(
        production.create(userA, { sources: [draft("a")], readViolations: [unknownType] }),
        "invalid",
        "request is invalid",
        [unknownType],
      );
      expect(await everything()).toEqual([]);
      expect(idSeq).toBe(0);
    });

    it("come before the ledger's own, which skip a value the adapter already reported", async () => {
      const read: Violation[] = [
        { source: 1, field: "end_at", detail: "end_at must be an RFC 3339 date-time …" },
        unknownType,
      ];
      const command: CreateCommand = {
        accountId: "acct-b",
        sources: [draft("a", { methodology: "" }), draft("b", { endAt: null })],
        readViolations: read,
      };
      await expectRefused(production.create(userA, command), "invalid", "request is invalid", [
        ...read,
        { field: "account_id", detail: "account_id is accepted only from admin tokens" },
        { source: 0, field: "methodology", detail: "methodology must not be empty" },
      ]);
    });

    it("block a list, a get and a delete", async () => {
      const [a] = await production.create(userA, { sources: [draft("a")] });
      const bad: Violation = { field: "limit", detail: 'limit must be an integer, got "x"' };
      await expectRefused(
        production.list(userA, noFilters({ readViolations: [bad] })),
        "invalid",
        "request is invalid",
        [bad],
      );
      await expectRefused(production.get(userA, { id: a.id, readViolations: [bad] }), "invalid", "request is invalid", [
        bad,
      ]);
      await expectRefused(
        production.delete(userA, { key: { by: "id", value: a.id }, readViolations: [bad] }),
        "invalid",
        "request is invalid",
        [bad],
      );
      expect((await everything()).map((r) => r.id)).toEqual([a.id]);
    });
  });

  it("answers unavailable once the store is closed", async () => {
    await store.close();
    const error = await expectRefused(
      production.list(userA, noFilters()),
      "unavailable",
      "the store is unavailable; retry later",
    );
    expect(error.cause).toBeInstanceOf(StoreUnavailableError);
  });
});

describe("store failures", () => {
  const failure = new StoreUnavailableError("db down: connection refused at 10.0.0.5");
  const fail = async (): Promise<never> => {
    throw failure;
  };
  const failing: SourceStore = {
    insertMany: fail,
    list: fail,
    get: fail,
    getAsOf: fail,
    deleteById: fail,
    deleteByAltId: fail,
    history: fail,
    conflictsOf: fail,
    ledgerSecret: fail,
    ping: fail,
    close: async () => {},
  };
  const ledger = createLedger({
    environment: "production",
    store: failing,
    newId: () => "id",
    now: () => T0,
    secret: TEST_SECRET,
  });

  it.each([
    ["create", () => ledger.create(userA, { sources: [draft("a")] })],
    ["list", () => ledger.list(userA, noFilters())],
    ["get", () => ledger.get(userA, { id: "id" })],
    ["delete by id", () => ledger.delete(userA, { key: { by: "id", value: "id" } })],
    ["delete by alt_id", () => ledger.delete(userA, { key: { by: "alt_id", value: "a" } })],
  ])("%s: a StoreUnavailableError becomes unavailable, the store error its cause", async (_name, call) => {
    const error = await expectRefused(call(), "unavailable", "the store is unavailable; retry later");
    expect(error.cause).toBe(failure);
    expect(error.message).not.toContain("10.0.0.5");
  });

  it("still validates before reaching the store", async () => {
    await expectRefused(ledger.get(userA, { id: "" }), "invalid", "request is invalid", [
      { field: "id", detail: "id is required" },
    ]);
  });

  it("passes any other store error on as it is", async () => {
    const bug = new TypeError("cannot read properties of undefined");
    const broken: SourceStore = {
      ...failing,
      list: async () => {
        throw bug;
      },
    };
    const onBroken = createLedger({ environment: "production", store: broken, newId: () => "id", secret: TEST_SECRET });
    await expect(onBroken.list(userA, noFilters())).rejects.toBe(bug);
  });
});

describe("the sandbox's capacity", () => {
  it("refuses a create past the per-session source count as exhausted, storing nothing", async () => {
    const store = createSandboxStore({ ttlMs: 3_600_000, maxPerSession: 2 });
    let n = 0;
    const ledger = createLedger({ environment: "sandbox", store, newId: () => `sandbox_${++n}`, secret: TEST_SECRET });
    try {
      await ledger.create(userA, { sources: [draft("a")] });
      const error = await expectRefused(
        ledger.create(userA, { sources: [draft("b"), draft("c")] }),
        "exhausted",
        "a sandbox session holds at most 2 sources; delete some sources or wait for the session to expire",
      );
      expect(error.violations).toEqual([]);
      expect((await ledger.list(userA, noFilters())).records.map((r) => r.altId)).toEqual(["a"]);
      // Capacity is checked before the alt_id: a full session answers exhausted even for a taken one.
      await ledger.create(userA, { sources: [draft("b")] });
      await expectRefused(
        ledger.create(userA, { sources: [draft("a")] }),
        "exhausted",
        "a sandbox session holds at most 2 sources; delete some sources or wait for the session to expire",
      );
      // Validation comes first.
      await expectRefused(ledger.create(userA, { sources: [draft("")] }), "invalid", "request is invalid", [
        { source: 0, field: "alt_id", detail: "alt_id is required" },
      ]);
      // Another account's session is not affected, and deleting makes room.
      expect(await ledger.create(userB, { sources: [draft("a"), draft("b")] })).toHaveLength(2);
      await ledger.delete(userA, { key: { by: "alt_id", value: "a" } });
      expect(await ledger.create(userA, { sources: [draft("c")] })).toHaveLength(1);
    } finally {
      await store.close();
    }
  });

  it("refuses a create past the per-session position count as exhausted", async () => {
    // A square has 5 positions: two fit in 10, three do not.
    const store = createSandboxStore({ ttlMs: 3_600_000, maxPositionsPerSession: 10 });
    let n = 0;
    const ledger = createLedger({ environment: "sandbox", store, newId: () => `sandbox_${++n}`, secret: TEST_SECRET });
    try {
      expect(await ledger.create(userA, { sources: [draft("a"), draft("b")] })).toHaveLength(2);
      await expectRefused(
        ledger.create(userA, { sources: [draft("c")] }),
        "exhausted",
        "a sandbox session holds at most 10 positions; delete some sources or wait for the session to expire",
      );
    } finally {
      await store.close();
    }
  });

  it("refuses a create past the sandbox-wide bounds as exhausted with a retry hint while only busy sessions hold them", async () => {
    const store = createSandboxStore({ ttlMs: 3_600_000, maxSessions: 1 });
    let n = 0;
    const ledger = createLedger({ environment: "sandbox", store, newId: () => `sandbox_${++n}`, secret: TEST_SECRET });
    try {
      // A's session was written this turn: it is in flight, and cannot be evicted for B's.
      await ledger.create(userA, { sources: [draft("a")] });
      const error = await expectRefused(
        ledger.create(userB, { sources: [draft("b")] }),
        "exhausted",
        "the sandbox holds at most 1 sessions across all accounts, and no idle session can be dropped to make " +
          "room; retry in 1 s",
      );
      expect(error.retryAfterS).toBe(1);
      // A turn later A's session is idle: B's create evicts it.
      await new Promise((resolve) => setImmediate(resolve));
      expect(await ledger.create(userB, { sources: [draft("b")] })).toHaveLength(1);
      expect((await ledger.list(userA, noFilters())).records).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it.each<[string, CapacityExceededError, string, number | undefined]>([
    [
      "the memory budget in MB, busy sessions holding it",
      new CapacityExceededError(256 * 1024 * 1024, "bytes", 1),
      "the sandbox holds at most 256 MB of memory across all accounts, and no idle session can be dropped to " +
        "make room; retry in 1 s",
      1,
    ],
    [
      "a budget of bytes that is no whole MB, a session too big for it alone",
      new CapacityExceededError(2500, "bytes"),
      "a sandbox session holds at most 2500 bytes of memory; delete some sources or wait for the session to expire",
      undefined,
    ],
    [
      "the session count, every session busy",
      new CapacityExceededError(1000, "sessions", 3),
      "the sandbox holds at most 1000 sessions across all accounts, and no idle session can be dropped to make " +
        "room; retry in 3 s",
      3,
    ],
  ])("words a store's capacity refusal: %s", async (_name, capacity, message, retryAfterS) => {
    const full: SourceStore = {
      insertMany: async () => {
        throw capacity;
      },
      list: async () => [],
      get: async () => null,
      getAsOf: async () => null,
      deleteById: async () => false,
      deleteByAltId: async () => false,
      history: async () => null,
      conflictsOf: async () => null,
      ledgerSecret: async () => TEST_SECRET,
      ping: async () => {},
      close: async () => {},
    };
    const ledger = createLedger({ environment: "sandbox", store: full, newId: () => "sandbox_1", secret: TEST_SECRET });
    const error = await expectRefused(ledger.create(userA, { sources: [draft("a")] }), "exhausted", message);
    expect(error.retryAfterS).toBe(retryAfterS);
  });

  it("refuses a session too big for the memory budget alone as exhausted, without a retry hint", async () => {
    const store = createSandboxStore({ ttlMs: 3_600_000, maxBytes: 2500 });
    let n = 0;
    const ledger = createLedger({ environment: "sandbox", store, newId: () => `sandbox_${++n}`, secret: TEST_SECRET });
    try {
      const error = await expectRefused(
        ledger.create(userA, { sources: [draft("x"), draft("y"), draft("z")] }),
        "exhausted",
        "a sandbox session holds at most 2500 bytes of memory; delete some sources or wait for the session to expire",
      );
      expect(error.retryAfterS).toBeUndefined();
    } finally {
      await store.close();
    }
  });
});
