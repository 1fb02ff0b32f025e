/**
 * toProtoSource builds the Source message without protobuf-es' `create` (rpc/messages.ts): it must
 * be the very message `create` makes of the same record, field for field and byte for byte.
 */
import { create, equals, toBinary, toJson } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { GeometrySchema, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { SourceRecord } from "../../src/model/records.js";
import { attributeTypes, geometrySources, sourceTypes } from "../../src/model/vocabulary.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { FULL_SOURCE_RECORD, NO_OPTIONAL_FIELDS } from "../support/source-records.js";

const FULL = FULL_SOURCE_RECORD;

const BARE: SourceRecord = {
  ...FULL,
  ...NO_OPTIONAL_FIELDS,
  geometry: {
    type: "Polygon",
    coordinates: [
      [
        [0, 0],
        [1, 0],
        [1, 1],
        [0, 0],
      ],
    ],
  },
};

/** The message as protobuf-es' `create` makes it: what toProtoSource was before. */
function viaCreate(record: SourceRecord) {
  return create(SourceSchema, {
    id: record.id,
    altId: record.altId,
    methodology: record.methodology ?? undefined,
    tags: record.tags,
    stewardId: record.stewardId ?? undefined,
    projectId: record.projectId ?? undefined,
    outcomeReportingYear: record.outcomeReportingYear ?? undefined,
    sourceType: record.sourceType === null ? 0 : (sourceTypes.valueOf(record.sourceType) ?? 0),
    attributeType: record.attributeType.map((name) => attributeTypes.valueOf(name) ?? 0),
    geometrySource: record.geometrySource === null ? 0 : (geometrySources.valueOf(record.geometrySource) ?? 0),
    geometry: viaCreateGeometry(record.geometry),
    startAt: timestampFromMs(record.startAt),
    endAt: timestampFromMs(record.endAt),
    accountId: record.accountId,
    createdBy: record.createdBy,
    updatedBy: record.updatedBy,
    createdAt: timestampFromMs(record.createdAt),
    updatedAt: timestampFromMs(record.updatedAt),
    conflict: record.conflict,
    unepOverlap: record.unepOverlap ?? undefined,
  });
}

/** The geometry as `create` makes it. */
function viaCreateGeometry(g: SourceRecord["geometry"]) {
  const pack = (rings: number[][][]) => ({ rings: rings.map((ring) => ({ coordinates: ring.flat() })) });
  return g.type === "Polygon"
    ? create(GeometrySchema, { kind: { case: "polygon", value: pack(g.coordinates) } })
    : create(GeometrySchema, { kind: { case: "multiPolygon", value: { polygons: g.coordinates.map(pack) } } });
}

describe("toProtoSource", () => {
  it.each([
    ["every field set", FULL],
    ["every optional field empty", BARE],
  ])("with %s: the message create() makes, the same bytes", (_what, record) => {
    const built = toProtoSource(record);
    const expected = viaCreate(record);
    expect(equals(SourceSchema, built, expected)).toBe(true);
    // create() leaves unset optional fields out; here they are present as undefined: unset alike.
    expect(toJson(SourceSchema, built)).toStrictEqual(toJson(SourceSchema, expected));
    expect(toBinary(SourceSchema, built)).toStrictEqual(toBinary(SourceSchema, expected));
  });

  it("keeps the vocabulary's numbers and the times' nanoseconds", () => {
    const built = toProtoSource(FULL);
    expect(built.sourceType).toBe(1);
    expect(built.attributeType).toEqual([1, 6]);
    expect(built.geometrySource).toBe(2);
    expect(built.endAt).toMatchObject({ seconds: BigInt(Math.floor(FULL.endAt / 1000)), nanos: 789_000_000 });
    expect(built.updatedAt).toMatchObject({ seconds: -2n, nanos: 500_000_000 });
  });
});

describe("geometryToProto", () => {
  it.each([
    ["a Polygon", BARE.geometry],
    ["a MultiPolygon", FULL.geometry],
  ])("of %s: the message create() makes, the same bytes", (_what, geometry) => {
    const built = geometryToProto(geometry);
    const expected = viaCreateGeometry(geometry);
    expect(equals(GeometrySchema, built, expected)).toBe(true);
    expect(built).toStrictEqual(expected);
    expect(toBinary(GeometrySchema, built)).toStrictEqual(toBinary(GeometrySchema, expected));
  });
});
