/**
 * The direct Source encoder (rpc/source-wire.ts) against protobuf-es' `toBinary`: the same bytes
 * for every field set and unset, empty, zero, negative, non-ASCII, and for random sources.
 */
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { type Source, SourceSchema } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { encodeGeometry } from "../../src/geo/geometry-wire.js";
import type { Position } from "../../src/geo/types.js";
import type { SourceRecord } from "../../src/model/records.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { encodeSource, encodeSourcesFieldData } from "../../src/rpc/source-wire.js";
import { prng } from "../support/geometry-fixtures.js";
import { FULL_SOURCE_RECORD, NO_OPTIONAL_FIELDS } from "../support/source-records.js";

function same(source: Source): void {
  const expected = Buffer.from(toBinary(SourceSchema, source));
  expect(Buffer.from(encodeSource(source)).equals(expected)).toBe(true);
}

const RING: Position[] = [
  [0, 0],
  [1, 0],
  [1, 1],
  [0, 0],
];

function record(overrides: Partial<SourceRecord> = {}): SourceRecord {
  return { ...FULL_SOURCE_RECORD, geometry: { type: "Polygon", coordinates: [RING] }, ...overrides };
}

describe("encodeSource writes what toBinary(SourceSchema) writes", () => {
  it("every field set", () => same(toProtoSource(record())));

  it("every optional field unset, every implicit one zero", () => {
    same(toProtoSource(record({ ...NO_OPTIONAL_FIELDS, createdBy: "", updatedBy: "" })));
    same(create(SourceSchema, {}));
  });

  it("optional fields set to empty, empty tags, zero year, zero and negative times, non-ASCII text", () => {
    same(
      toProtoSource(
        record({
          methodology: "",
          tags: ["", "étang", "🌾 field", "x".repeat(300)],
          stewardId: "",
          projectId: "projet-été",
          outcomeReportingYear: 0,
          startAt: 0,
          endAt: -1,
          createdAt: -86_400_000 * 400 - 123,
          updatedAt: 999,
        }),
      ),
    );
    same(toProtoSource(record({ outcomeReportingYear: -5 })));
  });

  it("a MultiPolygon, a protected-area overlap with zero and empty parts", () => {
    same(
      toProtoSource(
        record({
          geometry: { type: "MultiPolygon", coordinates: [[RING], [RING, RING]] },
          unepOverlap: {
            dataset: "",
            overlaps: false,
            areaM2: 0,
            fraction: 0,
            areas: [
              { id: "", name: "", designation: "", iucnCategory: "", areaM2: 0 },
              { id: "1", name: "A", designation: "B", iucnCategory: "Ia", areaM2: -0.5 },
            ],
          },
        }),
      ),
    );
  });

  it("1,000 random sources", () => {
    const random = prng(13);
    const text = () =>
      ["", "a", "é", "🌾", "plain-id", "x".repeat(Math.floor(random() * 200))][Math.floor(random() * 6)];
    const maybe = <T>(value: T): T | null => (random() < 0.3 ? null : value);
    const time = () => Math.floor((random() - 0.3) * 4e12);
    for (let i = 0; i < 1_000; i++) {
      const ring = Array.from(
        { length: 3 + Math.floor(random() * 20) },
        (): Position => [random() * 360 - 180, random() * 180 - 90],
      );
      ring.push(ring[0]);
      const source = toProtoSource(
        record({
          id: text(),
          altId: text(),
          methodology: maybe(text()),
          tags: Array.from({ length: Math.floor(random() * 4) }, text),
          stewardId: maybe(text()),
          projectId: maybe(text()),
          outcomeReportingYear: maybe(Math.floor(random() * 4000) - 100),
          sourceType: maybe(["FIELD", "SITE", "JURISDICTIONAL"][Math.floor(random() * 3)]),
          attributeType: ["CARBON_REMOVAL", "BIODIVERSITY", "WATER_QUANTITY"].slice(0, Math.floor(random() * 4)),
          geometrySource: maybe("DERIVED"),
          geometry:
            random() < 0.5
              ? { type: "Polygon", coordinates: [ring] }
              : { type: "MultiPolygon", coordinates: [[ring], [ring]] },
          startAt: time(),
          endAt: time(),
          createdBy: text(),
          updatedBy: text(),
          createdAt: time(),
          updatedAt: time(),
          conflict: random() < 0.5,
          unepOverlap:
            random() < 0.5
              ? null
              : { dataset: text(), overlaps: random() < 0.5, areaM2: random() * 1e6, fraction: random(), areas: [] },
        }),
      );
      same(source);
    }
  });

  it("as unknown fields: each the length, then the message, which decodes to the same Source; all in one buffer", () => {
    const sources = [
      toProtoSource(record()),
      toProtoSource(record({ id: "src-é", tags: [] })),
      toProtoSource(record({ altId: "x".repeat(200) })),
    ];
    const fields = encodeSourcesFieldData(sources);
    expect(fields).toHaveLength(3);
    fields.forEach((data, i) => {
      const message = toBinary(SourceSchema, sources[i]);
      expect(data.length).toBe(message.length + (message.length < 128 ? 1 : 2));
      expect(Buffer.from(data.subarray(data.length - message.length)).equals(Buffer.from(message))).toBe(true);
      expect(fromBinary(SourceSchema, data.subarray(data.length - message.length))).toEqual(
        fromBinary(SourceSchema, message),
      );
      expect(data.buffer).toBe(fields[0].buffer);
    });
    expect(fields[1].byteOffset).toBe(fields[0].byteOffset + fields[0].length);
  });
});

describe("a Source of a record with stored GeoJSON text (the embedded store's)", () => {
  it("encodes its geometry from the text, to the same bytes, and builds the message only when read", () => {
    const eager = record({ geometry: { type: "MultiPolygon", coordinates: [[RING], [RING, RING]] } });
    const { geometry: _geometry, ...rest } = eager;
    let parsed = 0;
    // The record's parsed geometry, counted: a store parses its text only when this is read.
    const stored = Object.defineProperty({ ...rest } as SourceRecord, "geometry", {
      get: () => {
        parsed += 1;
        return eager.geometry;
      },
      enumerable: true,
    });
    Object.defineProperty(stored, "geometryJson", { value: JSON.stringify(eager.geometry), enumerable: false });
    const lazy = toProtoSource(stored);
    const expected = Buffer.from(toBinary(SourceSchema, toProtoSource(eager)));
    expect(Buffer.from(encodeSource(lazy)).equals(expected)).toBe(true);
    expect(parsed).toBe(0);
    // Read (a JSON answer, protobuf-es' reflection): the same message as the eager one's, built once.
    expect(Buffer.from(toBinary(SourceSchema, lazy)).equals(expected)).toBe(true);
    expect(lazy.geometry?.kind.case).toBe("multiPolygon");
    expect(parsed).toBe(1);
    expect(Buffer.from(encodeSource(lazy)).equals(expected)).toBe(true);
    // The Source's own fields are plain data: one shape for every Source.
    expect(Object.getOwnPropertyDescriptor(lazy, "geometry")?.get).toBeUndefined();
  });

  it("copies the wire bytes the store attached (RecordRead.geometryWire) instead of scanning the text", () => {
    const eager = record({ geometry: { type: "MultiPolygon", coordinates: [[RING], [RING, RING]] } });
    const stored: SourceRecord = { ...eager };
    Object.defineProperty(stored, "geometryJson", { value: JSON.stringify(eager.geometry), enumerable: false });
    // Bytes of another geometry, so the answer shows which was written (a store gives the text's own).
    const other = record();
    const otherBytes = encodeGeometry(geometryToProto(other.geometry));
    Object.defineProperty(stored, "geometryWire", { value: otherBytes, enumerable: false });
    const written = fromBinary(SourceSchema, encodeSource(toProtoSource(stored)));
    expect(written.geometry?.kind).toEqual(geometryToProto(other.geometry).kind);
    // The message itself still reads as the text says (a JSON answer, an interceptor).
    expect(toProtoSource(stored).geometry?.kind).toEqual(geometryToProto(eager.geometry).kind);
  });

  it("encodes what was assigned over the stored geometry, not the text", () => {
    const eager = record({ geometry: { type: "MultiPolygon", coordinates: [[RING], [RING, RING]] } });
    const stored: SourceRecord = { ...eager };
    Object.defineProperty(stored, "geometryJson", { value: JSON.stringify(eager.geometry), enumerable: false });
    const other = toProtoSource(record());
    const kindReplaced = toProtoSource(stored);
    if (kindReplaced.geometry === undefined || other.geometry === undefined) throw new Error("no geometry");
    kindReplaced.geometry.kind = other.geometry.kind;
    const geometryReplaced = toProtoSource(stored);
    geometryReplaced.geometry = other.geometry;
    const expected = Buffer.from(toBinary(SourceSchema, { ...toProtoSource(eager), geometry: other.geometry }));
    expect(Buffer.from(encodeSource(kindReplaced)).equals(expected)).toBe(true);
    expect(Buffer.from(encodeSource(geometryReplaced)).equals(expected)).toBe(true);
    // Read, then changed in place (as protobuf-es' merge does): the change is written, not the text.
    const changedInPlace = toProtoSource(stored);
    const kind = changedInPlace.geometry?.kind;
    if (kind?.case !== "multiPolygon") throw new Error("not a MultiPolygon");
    kind.value.polygons.pop();
    expect(Buffer.from(encodeSource(changedInPlace)).equals(Buffer.from(toBinary(SourceSchema, changedInPlace)))).toBe(
      true,
    );
    expect(fromBinary(SourceSchema, encodeSource(changedInPlace)).geometry?.kind).toEqual(kind);
  });

  it("falls back to the geometry message when the text is not the store's plain form", () => {
    const eager = record();
    const stored: SourceRecord = { ...eager };
    Object.defineProperty(stored, "geometryJson", { value: ` ${JSON.stringify(eager.geometry)}`, enumerable: false });
    expect(
      Buffer.from(encodeSource(toProtoSource(stored))).equals(
        Buffer.from(toBinary(SourceSchema, toProtoSource(eager))),
      ),
    ).toBe(true);
  });
});

describe("a Source of a record whose text is derived, not stored (the sandbox's accessor)", () => {
  it("encodes the exact doubles, -0 included, not the text (JSON writes -0 as 0)", () => {
    const exact = record({ geometry: { type: "Polygon", coordinates: [ring0()] } });
    const derived: SourceRecord = { ...exact };
    Object.defineProperty(derived, "geometryJson", { get: () => JSON.stringify(exact.geometry), enumerable: false });
    const bytes = encodeSource(toProtoSource(derived));
    expect(Buffer.from(bytes).equals(Buffer.from(toBinary(SourceSchema, toProtoSource(exact))))).toBe(true);
    const decoded = fromBinary(SourceSchema, bytes);
    const kind = decoded.geometry?.kind;
    expect(kind?.case === "polygon" && Object.is(kind.value.rings[0].coordinates[0], -0)).toBe(true);
  });
});

function ring0(): Position[] {
  return [
    [-0, -0],
    [2, -0],
    [2, 2],
    [-0, -0],
  ];
}
