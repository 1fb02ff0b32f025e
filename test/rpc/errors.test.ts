/**
 * The ledger's refusals as ConnectErrors (src/rpc/errors.ts): proto field paths, codes per kind,
 * the google.rpc.BadRequest detail and its cap, the summary message, and the cause each keeps.
 */

import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { BadRequestSchema, RetryInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { LedgerError, type LedgerErrorKind } from "../../src/ledger/errors.js";
import type { Violation } from "../../src/ledger/violation.js";
import { asConnect, connectErrorOf, fieldPath, ledgerErrorOf, MAX_DETAIL_VIOLATIONS } from "../../src/rpc/errors.js";
import { StoreUnavailableError } from "../../src/store/port.js";

/**
 * The google.rpc.BadRequest entries a ConnectError carries, as plain objects: its one detail is
 * that standard type, and no entry sets `reason` or `localized_message` (docs/api.md §9.5).
 */
function violationsOf(error: ConnectError) {
  expect(error.details.map((d) => ("desc" in d ? d.desc.typeName : d.type))).toEqual(["google.rpc.BadRequest"]);
  const details = error.findDetails(BadRequestSchema);
  expect(details).toHaveLength(1);
  for (const v of details[0].fieldViolations) {
    expect(v.reason).toBe("");
    expect(v.localizedMessage).toBeUndefined();
  }
  return details[0].fieldViolations.map(({ field, description }) => ({ field, description }));
}

describe("fieldPath", () => {
  it.each<[string, Violation, string]>([
    ["a request field", { field: "limit", detail: "" }, "limit"],
    ["an element of a request field", { field: "attribute_type", index: 1, detail: "" }, "attribute_type[1]"],
    ["a source field", { source: 3, field: "alt_id", detail: "" }, "sources[3].alt_id"],
    ["an element of a source field", { source: 0, field: "tags", index: 1, detail: "" }, "sources[0].tags[1]"],
    ["a geometry with no path", { source: 1, field: "geometry", detail: "" }, "sources[1].geometry"],
  ])("%s", (_name, violation, path) => {
    expect(fieldPath(violation)).toBe(path);
  });

  const geometry = (geometryKind: "polygon" | "multi_polygon", coordinates: number[]): Violation => ({
    source: 0,
    field: "geometry",
    geometryKind,
    coordinates,
    detail: "",
  });

  it.each<[string, Violation, string]>([
    ["a whole Polygon", geometry("polygon", []), "sources[0].geometry.polygon"],
    ["a Polygon's ring", geometry("polygon", [0]), "sources[0].geometry.polygon.rings[0]"],
    [
      "a Polygon's position, at its longitude's index",
      geometry("polygon", [1, 4]),
      "sources[0].geometry.polygon.rings[1].coordinates[8]",
    ],
    ["a position 0", geometry("polygon", [0, 0]), "sources[0].geometry.polygon.rings[0].coordinates[0]"],
    ["a whole MultiPolygon", geometry("multi_polygon", []), "sources[0].geometry.multi_polygon"],
    ["a MultiPolygon's part", geometry("multi_polygon", [1]), "sources[0].geometry.multi_polygon.polygons[1]"],
    [
      "a MultiPolygon's ring",
      geometry("multi_polygon", [1, 1]),
      "sources[0].geometry.multi_polygon.polygons[1].rings[1]",
    ],
    [
      "a MultiPolygon's position, at its longitude's index",
      geometry("multi_polygon", [2, 0, 3]),
      "sources[0].geometry.multi_polygon.polygons[2].rings[0].coordinates[6]",
    ],
  ])("%s", (_name, violation, path) => {
    expect(fieldPath(violation)).toBe(path);
  });

  it("ignores coordinates without a geometry kind", () => {
    expect(fieldPath({ source: 0, field: "geometry", coordinates: [0, 1], detail: "" })).toBe("sources[0].geometry");
  });
});

describe("connectErrorOf", () => {
  it.each<[LedgerErrorKind, Code]>([
    ["invalid", Code.InvalidArgument],
    ["already_exists", Code.AlreadyExists],
    ["not_found", Code.NotFound],
    ["exhausted", Code.ResourceExhausted],
    ["unavailable", Code.Unavailable],
  ])("maps %s to code %s", (kind, code) => {
    const error = connectErrorOf(new LedgerError(kind, "some sentence"));
    expect(error).toBeInstanceOf(ConnectError);
    expect([error.code, error.rawMessage]).toEqual([code, "some sentence"]);
  });

  it("carries a passing refusal's retry hint as retry-after metadata and a RetryInfo detail, and none when there is none", () => {
    const busy = connectErrorOf(new LedgerError("exhausted", "the sandbox is busy", [], { retryAfterS: 2 }));
    expect([busy.code, busy.rawMessage]).toEqual([Code.ResourceExhausted, "the sandbox is busy"]);
    expect(busy.metadata.get("retry-after")).toBe("2");
    expect(busy.findDetails(RetryInfoSchema).map((info) => info.retryDelay?.seconds)).toEqual([2n]);
    const full = connectErrorOf(new LedgerError("exhausted", "a sandbox session holds at most 10000 sources"));
    expect(full.metadata.get("retry-after")).toBeNull();
    expect(full.details).toEqual([]);
  });

  it("keeps the message of a refusal without violations, carries no detail, and keeps the LedgerError as cause", () => {
    const refusal = new LedgerError("not_found", 'source "src_1" not found');
    const error = connectErrorOf(refusal);
    expect(error.rawMessage).toBe('source "src_1" not found');
    expect(error.details).toEqual([]);
    expect(error.cause).toBe(refusal);
    expect(ledgerErrorOf(error)).toBe(refusal);
  });

  it("keeps the store's error as the cause of unavailable (for the log), not the LedgerError", () => {
    const storeError = new StoreUnavailableError("sqlite list failed: disk I/O error");
    const refusal = new LedgerError("unavailable", "the store is unavailable; retry later", [], { cause: storeError });
    const error = connectErrorOf(refusal);
    expect([error.code, error.rawMessage]).toEqual([Code.Unavailable, "the store is unavailable; retry later"]);
    expect(error.cause).toBe(storeError);
    expect(ledgerErrorOf(error)).toBeNull();
  });

  it("keeps the LedgerError as the cause of a refusal with violations", () => {
    const refusal = new LedgerError("already_exists", "alt_id already used", [
      { source: 1, field: "alt_id", detail: 'alt_id "b" is already used by a source of this account' },
    ]);
    const error = connectErrorOf(refusal);
    expect(error.code).toBe(Code.AlreadyExists);
    expect(error.rawMessage).toBe('sources[1].alt_id: alt_id "b" is already used by a source of this account');
    expect(error.cause).toBe(refusal);
    expect(ledgerErrorOf(error)).toBe(refusal);
    expect(violationsOf(error)).toEqual([
      {
        field: "sources[1].alt_id",
        description: 'alt_id "b" is already used by a source of this account',
      },
    ]);
  });

  it("summarises the first violation with its path and how many more there are", () => {
    const violations: Violation[] = [
      { source: 0, field: "alt_id", detail: "alt_id is required" },
      { source: 0, field: "tags", index: 2, detail: "a tag must be 1 to 128 characters, got 0" },
      {
        source: 2,
        field: "geometry",
        geometryKind: "polygon",
        coordinates: [0, 1],
        detail: "position 1 of the exterior ring is out of range at (181, 0): longitude must be within -180..180",
      },
      { field: "account_id", detail: "account_id is accepted only from admin tokens" },
    ];
    const error = connectErrorOf(new LedgerError("invalid", "request is invalid", violations));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("sources[0].alt_id: alt_id is required (and 3 more)");
    expect(error.message).toBe("[invalid_argument] sources[0].alt_id: alt_id is required (and 3 more)");
    expect(violationsOf(error)).toEqual([
      { field: "sources[0].alt_id", description: "alt_id is required" },
      {
        field: "sources[0].tags[2]",
        description: "a tag must be 1 to 128 characters, got 0",
      },
      {
        field: "sources[2].geometry.polygon.rings[0].coordinates[2]",
        description: "position 1 of the exterior ring is out of range at (181, 0): longitude must be within -180..180",
      },
      {
        field: "account_id",
        description: "account_id is accepted only from admin tokens",
      },
    ]);
  });

  it("says nothing of more when there is one violation", () => {
    const error = connectErrorOf(
      new LedgerError("invalid", "request is invalid", [
        { field: "limit", detail: "limit must be from 1 to 1000, got 0" },
      ]),
    );
    expect(error.rawMessage).toBe("limit: limit must be from 1 to 1000, got 0");
  });

  const many = (n: number): Violation[] =>
    Array.from({ length: n }, (_, i) => ({
      source: 0,
      field: "geometry",
      geometryKind: "polygon" as const,
      coordinates: [0, i],
      detail: `problem ${i}`,
    }));

  it("lists exactly 100 violations without a note", () => {
    expect(MAX_DETAIL_VIOLATIONS).toBe(100);
    const shown = violationsOf(connectErrorOf(new LedgerError("invalid", "request is invalid", many(100))));
    expect(shown).toHaveLength(100);
    expect(shown[99]).toEqual({
      field: "sources[0].geometry.polygon.rings[0].coordinates[198]",
      description: "problem 99",
    });
  });

  it("caps the detail at 100 violations, then 'and N more violations'; the message counts them all", () => {
    const error = connectErrorOf(new LedgerError("invalid", "request is invalid", many(250)));
    const shown = violationsOf(error);
    expect(shown).toHaveLength(101);
    expect(shown[0].description).toBe("problem 0");
    expect(shown[99].description).toBe("problem 99");
    expect(shown[100]).toEqual({ field: "", description: "and 150 more violations" });
    expect(error.rawMessage).toBe("sources[0].geometry.polygon.rings[0].coordinates[0]: problem 0 (and 249 more)");
    // The LedgerError behind it still holds every violation, for REST to list up to its own cap.
    expect(ledgerErrorOf(error)?.violations).toHaveLength(250);
  });

  it("notes one more violation past the cap", () => {
    const shown = violationsOf(connectErrorOf(new LedgerError("invalid", "request is invalid", many(101))));
    expect(shown).toHaveLength(101);
    expect(shown[100]).toEqual({ field: "", description: "and 1 more violations" });
  });
});

describe("asConnect", () => {
  it("passes a result through", async () => {
    await expect(asConnect(async () => 42)).resolves.toBe(42);
  });

  it("turns a LedgerError into its ConnectError", async () => {
    const refusal = new LedgerError("exhausted", "a sandbox session holds at most 2 sources; …");
    const error = await asConnect(async () => {
      throw refusal;
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.ResourceExhausted);
    expect(ledgerErrorOf(error as ConnectError)).toBe(refusal);
  });

  it("lets any other error pass on unchanged", async () => {
    const bug = new RangeError("boom");
    await expect(
      asConnect(async () => {
        throw bug;
      }),
    ).rejects.toBe(bug);
  });
});

describe("ledgerErrorOf", () => {
  it("is null for a ConnectError the ledger did not make", () => {
    expect(ledgerErrorOf(new ConnectError("no", Code.PermissionDenied))).toBeNull();
    expect(ledgerErrorOf(new ConnectError("no", Code.Internal, undefined, undefined, new Error("x")))).toBeNull();
  });
});
