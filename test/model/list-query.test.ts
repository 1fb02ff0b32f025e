/**
 * LIST_FILTERS (src/model/list-query.ts) against the proto it is derived from: which fields are
 * filters, in which order, of which kind, where they exist, and how each store names them.
 */
import { ScalarType } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  AttributeTypeSchema,
  GeometrySourceSchema,
  ListSourcesRequestSchema,
  SourceTypeSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { LIST_FILTERS, type ListFilterValues, listFiltersOf } from "../../src/model/list-query.js";
import { attributeTypes, geometrySources, sourceTypes } from "../../src/model/vocabulary.js";

const byName = new Map(LIST_FILTERS.map((filter) => [filter.name, filter]));

describe("LIST_FILTERS", () => {
  it("is every ListSourcesRequest field except limit, offset, account_id, page_token and as_of, in proto order", () => {
    const fields = ListSourcesRequestSchema.fields.map((f) => f.name);
    expect(fields).toEqual([
      "methodology",
      "steward_id",
      "project_id",
      "outcome_reporting_year",
      "source_type",
      "attribute_type",
      "geometry_source",
      "limit",
      "offset",
      "account_id",
      "id",
      "alt_id",
      "page_token",
      "conflict",
      "active_at",
      "bbox",
      "as_of",
      "active_during",
    ]);
    expect(LIST_FILTERS.map((f) => f.name)).toEqual(
      fields.filter((name) => !["limit", "offset", "account_id", "page_token", "as_of"].includes(name)),
    );
  });

  it("reads each filter from the generated message property of its field", () => {
    expect(LIST_FILTERS.map((f) => f.messageKey)).toEqual(
      ListSourcesRequestSchema.fields
        .filter((f) => !["limit", "offset", "account_id", "page_token", "as_of"].includes(f.name))
        .map((f) => f.localName),
    );
    expect(LIST_FILTERS.map((f) => f.messageKey)).toEqual([
      "methodology",
      "stewardId",
      "projectId",
      "outcomeReportingYear",
      "sourceType",
      "attributeType",
      "geometrySource",
      "id",
      "altId",
      "conflict",
      "activeAt",
      "bbox",
      "activeDuring",
    ]);
  });

  it("gives each filter the kind its field's type calls for", () => {
    expect(Object.fromEntries(LIST_FILTERS.map((f) => [f.name, f.kind]))).toEqual({
      methodology: "text",
      steward_id: "text",
      project_id: "text",
      outcome_reporting_year: "year",
      source_type: "enum",
      attribute_type: "anyOf",
      geometry_source: "enum",
      id: "text",
      alt_id: "text",
      conflict: "bool",
      active_at: "instant",
      bbox: "box",
      active_during: "range",
    });
    for (const filter of LIST_FILTERS) {
      const field = ListSourcesRequestSchema.fields.find((f) => f.name === filter.name)!;
      const expected =
        field.fieldKind === "list"
          ? "anyOf"
          : field.fieldKind === "enum"
            ? "enum"
            : field.fieldKind === "message"
              ? {
                  "google.protobuf.Timestamp": "instant",
                  "sourceledger.v2.BoundingBox": "box",
                  "sourceledger.v2.TimeRange": "range",
                }[field.message.typeName]
              : field.fieldKind === "scalar" && field.scalar === ScalarType.INT32
                ? "year"
                : field.fieldKind === "scalar" && field.scalar === ScalarType.BOOL
                  ? "bool"
                  : "text";
      expect(filter.kind, filter.name).toBe(expected);
    }
  });

  it("gives the enum filters the vocabulary of their proto enum, and the others none", () => {
    expect(byName.get("source_type")?.vocabulary).toBe(sourceTypes);
    expect(byName.get("attribute_type")?.vocabulary).toBe(attributeTypes);
    expect(byName.get("geometry_source")?.vocabulary).toBe(geometrySources);
    expect(sourceTypes.names).toEqual(["FIELD", "FACILITY", "DEVICE", "PROGRAM", "JURISDICTIONAL", "SITE"]);
    expect(geometrySources.names).toEqual(["CUSTODIAN_DRAWN", "AUTHORITATIVE_GIS", "EXTERNAL_REGISTRY", "DERIVED"]);
    // The names are the proto value names after the enum's prefix, without UNSPECIFIED.
    expect(attributeTypes.names).toEqual(
      AttributeTypeSchema.values.filter((v) => v.number !== 0).map((v) => v.name.replace("ATTRIBUTE_TYPE_", "")),
    );
    expect(sourceTypes.names.map((n) => sourceTypes.valueOf(n))).toEqual(
      SourceTypeSchema.values.filter((v) => v.number !== 0).map((v) => v.number),
    );
    expect(geometrySources.nameOf(4)).toBe("DERIVED");
    expect(geometrySources.nameOf(0)).toBeUndefined();
    expect(GeometrySourceSchema.values).toHaveLength(5);
    for (const filter of LIST_FILTERS) {
      if (filter.kind === "text" || filter.kind === "year") expect(filter.vocabulary, filter.name).toBeNull();
    }
  });

  it("keys every filter by a property of ListFilterValues, each once", () => {
    // Every key of ListFilterValues, set: the compiler refuses a missing or an unknown key here.
    const everyValue: Required<ListFilterValues> = {
      methodology: "m",
      stewardId: "s",
      projectId: "p",
      outcomeReportingYear: 2024,
      sourceType: "FIELD",
      attributeTypes: ["BIODIVERSITY"],
      geometrySource: "DERIVED",
      id: "sandbox_1",
      altId: "a",
      conflict: true,
      activeAt: 0,
      bbox: { minX: 0, minY: 0, maxX: 1, maxY: 1 },
      activeDuring: { start: 0, end: 1 },
    };
    const queryKeys = LIST_FILTERS.map((f) => f.queryKey);
    expect([...queryKeys].sort()).toEqual(Object.keys(everyValue).sort());
    expect(new Set(queryKeys).size).toBe(queryKeys.length);
    expect(byName.get("attribute_type")?.queryKey).toBe("attributeTypes");
  });

  it("offers id in the sandbox only, every other filter in both environments", () => {
    expect(Object.fromEntries(LIST_FILTERS.map((f) => [f.name, f.environments]))).toEqual({
      methodology: ["production", "sandbox"],
      steward_id: ["production", "sandbox"],
      project_id: ["production", "sandbox"],
      outcome_reporting_year: ["production", "sandbox"],
      source_type: ["production", "sandbox"],
      attribute_type: ["production", "sandbox"],
      geometry_source: ["production", "sandbox"],
      id: ["sandbox"],
      alt_id: ["production", "sandbox"],
      conflict: ["production", "sandbox"],
      active_at: ["production", "sandbox"],
      bbox: ["production", "sandbox"],
      active_during: ["production", "sandbox"],
    });
    expect(listFiltersOf("production").map((f) => f.name)).toEqual([
      "methodology",
      "steward_id",
      "project_id",
      "outcome_reporting_year",
      "source_type",
      "attribute_type",
      "geometry_source",
      "alt_id",
      "conflict",
      "active_at",
      "bbox",
      "active_during",
    ]);
    expect(listFiltersOf("sandbox")).toEqual(LIST_FILTERS);
  });

  it("names the SQLite column after the field and the MongoDB path after it too, except id → _id", () => {
    expect(LIST_FILTERS.map((f) => [f.name, f.column, f.documentPath])).toEqual([
      ["methodology", "methodology", "methodology"],
      ["steward_id", "steward_id", "steward_id"],
      ["project_id", "project_id", "project_id"],
      ["outcome_reporting_year", "outcome_reporting_year", "outcome_reporting_year"],
      ["source_type", "source_type", "source_type"],
      ["attribute_type", "attribute_type", "attribute_type"],
      ["geometry_source", "geometry_source", "geometry_source"],
      ["id", "id", "_id"],
      ["alt_id", "alt_id", "alt_id"],
      ["conflict", "conflict", "conflict"],
      ["active_at", "active_at", "active_at"],
      ["bbox", "bbox", "bbox"],
      ["active_during", "active_during", "active_during"],
    ]);
  });
});
