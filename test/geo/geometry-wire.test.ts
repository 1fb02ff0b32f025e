import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { UnaryRequest, UnaryResponse } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  GeometrySchema,
  GetSourceResponseSchema,
  ListSourcesResponseSchema,
  SourceLedgerService,
  SourceSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { geoJsonWireBytes, geometryWireBytes } from "../../src/geo/geojson-wire.js";
import { decodeGeometryWire, encodeGeometry } from "../../src/geo/geometry-wire.js";
import type { PolygonCoordinates, Position, SourceGeometry } from "../../src/geo/types.js";
import { answersInProtobufBinary, preEncodedSourceAnswers } from "../../src/rpc/binary-answers.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { toProtoSource } from "../../src/rpc/messages.js";
import { makeFullRecord } from "../contract/fixtures.js";
import { prng } from "../support/geometry-fixtures.js";

function randomRing(random: () => number, positions: number): Position[] {
  const out: Position[] = [];
  for (let i = 0; i < positions; i++) out.push([random() * 360 - 180, random() * 180 - 90]);
  return out;
}

function polygon(random: () => number): PolygonCoordinates {
  const rings = 1 + Math.floor(random() * 3);
  // Sizes around the varint boundaries: 7 positions = 112 bytes, 8 = 128 (two-byte length).
  return Array.from({ length: rings }, () => randomRing(random, [4, 7, 8, 100, 1025][Math.floor(random() * 5)]));
}

/** The n-th of a seeded run: Polygons and MultiPolygons of 1–4 parts, alternating. */
function seededGeometry(random: () => number, n: number): SourceGeometry {
  if (n % 2 === 0) return { type: "Polygon", coordinates: polygon(random) };
  return {
    type: "MultiPolygon",
    coordinates: Array.from({ length: 1 + Math.floor(random() * 4) }, () => polygon(random)),
  };
}

const reference = (g: SourceGeometry) => toBinary(GeometrySchema, geometryToProto(g));
const encoded = (g: SourceGeometry) => encodeGeometry(geometryToProto(g));

describe("geometry wire encoding", () => {
  it("writes exactly protobuf-es's bytes for 300 seeded polygons and multipolygons", () => {
    const random = prng(20261126);
    for (let n = 0; n < 300; n++) {
      const g = seededGeometry(random, n);
      expect(Buffer.from(encoded(g)).equals(Buffer.from(reference(g))), `case ${n}`).toBe(true);
    }
  });

  it("keeps the bits of special doubles: -0, the smallest subnormal, the largest finite value", () => {
    const g: SourceGeometry = {
      type: "Polygon",
      coordinates: [
        [
          [-0, 5e-324],
          [Number.MAX_VALUE, -Number.MAX_VALUE],
          [0.1 + 0.2, -0],
          [-0, 5e-324],
        ],
      ],
    };
    const bytes = encoded(g);
    expect(Buffer.from(bytes).equals(Buffer.from(reference(g)))).toBe(true);
    const decoded = fromBinary(GeometrySchema, bytes);
    const coordinates = decoded.kind.case === "polygon" ? decoded.kind.value.rings[0].coordinates : [];
    expect(Object.is(coordinates[0], -0)).toBe(true);
    expect(coordinates).toEqual([-0, 5e-324, Number.MAX_VALUE, -Number.MAX_VALUE, 0.1 + 0.2, -0, -0, 5e-324]);
  });

  it("writes empty rings and polygons as protobuf-es does", () => {
    const g: SourceGeometry = {
      type: "MultiPolygon",
      coordinates: [
        [],
        [[]],
        [
          [
            [1, 2],
            [3, 4],
          ],
          [],
        ],
      ],
    };
    expect(Buffer.from(encoded(g)).equals(Buffer.from(reference(g)))).toBe(true);
    const single: SourceGeometry = { type: "Polygon", coordinates: [] };
    expect(Buffer.from(encoded(single)).equals(Buffer.from(reference(single)))).toBe(true);
  });
});

describe("geometry wire decoding (a large stored geometry read from its kept bytes)", () => {
  it("gives back the positions of 300 seeded polygons and multipolygons, from both encoders, and the text's", () => {
    const random = prng(20261127);
    for (let n = 0; n < 300; n++) {
      const g = seededGeometry(random, n);
      expect(decodeGeometryWire(encoded(g)), `case ${n}`).toEqual(g);
      expect(decodeGeometryWire(geometryWireBytes(g)), `case ${n}`).toEqual(g);
      const text = JSON.stringify(g);
      expect(decodeGeometryWire(geoJsonWireBytes(text) as Uint8Array), `case ${n}`).toEqual(JSON.parse(text));
    }
  });

  it("reads -0 as JSON text does (0), and an empty ring as an empty ring", () => {
    const g: SourceGeometry = {
      type: "Polygon",
      coordinates: [
        [
          [-0, 1],
          [2, -0],
          [3, 4],
          [-0, 1],
        ],
        [],
      ],
    };
    const decoded = decodeGeometryWire(geometryWireBytes(g));
    expect(Object.is(decoded.coordinates[0][0][0], 0)).toBe(true);
    expect(decoded.coordinates[1]).toEqual([]);
  });

  it("throws on bytes that are not a Geometry message: cut short, a wrong field, trailing bytes", () => {
    const bytes = geometryWireBytes({ type: "Polygon", coordinates: [polygon(prng(1))[0]] });
    expect(() => decodeGeometryWire(bytes.subarray(0, bytes.length - 3))).toThrow("geometry wire bytes");
    expect(() => decodeGeometryWire(Uint8Array.of(0x1a, 0x00))).toThrow("geometry wire bytes");
    expect(() => decodeGeometryWire(Uint8Array.from([...bytes, 0x0a, 0x00]))).toThrow("geometry wire bytes");
    expect(() => decodeGeometryWire(new Uint8Array(0))).toThrow("geometry wire bytes");
  });
});

describe("binary answers: sources pre-encoded as the last step before serialisation", () => {
  const answer = (contentType: string | null, message: { $typeName: string }) => {
    const header = new Headers(contentType === null ? {} : { "content-type": contentType });
    const method = SourceLedgerService.methods.find((m) => m.output.typeName === message.$typeName);
    const next = async () => ({ stream: false, message, method }) as unknown as UnaryResponse;
    return preEncodedSourceAnswers(next as never)({ stream: false, header } as unknown as UnaryRequest);
  };

  it("writes the same bytes as protobuf-es for Get and List answers, and the message decodes equal", async () => {
    const records = [
      makeFullRecord(),
      makeFullRecord({
        geometry: {
          type: "MultiPolygon",
          coordinates: [
            [
              [
                [0, 0],
                [1, 0],
                [1, 1],
                [0, 0],
              ],
            ],
          ],
        },
      }),
    ];
    const regular = create(ListSourcesResponseSchema, { sources: records.map(toProtoSource) });
    const expected = toBinary(ListSourcesResponseSchema, regular);
    const list = create(ListSourcesResponseSchema, { sources: records.map(toProtoSource), nextPageToken: "next" });
    await answer("application/grpc", list);
    expect(list.sources).toEqual([]);
    expect(list.$unknown?.map((u) => u.no)).toEqual([1, 1]);
    // Without a page token the bytes are protobuf-es' own, sources in order, each in field order.
    const noToken = create(ListSourcesResponseSchema, { sources: records.map(toProtoSource) });
    await answer("application/grpc", noToken);
    expect(Buffer.from(toBinary(ListSourcesResponseSchema, noToken)).equals(Buffer.from(expected))).toBe(true);
    // With one, the token comes before the sources: the same message once decoded.
    const decodedList = fromBinary(ListSourcesResponseSchema, toBinary(ListSourcesResponseSchema, list));
    expect(
      equals(
        ListSourcesResponseSchema,
        decodedList,
        create(ListSourcesResponseSchema, { sources: records.map(toProtoSource), nextPageToken: "next" }),
      ),
    ).toBe(true);
    expect(decodedList.sources[1].geometry?.kind.case).toBe("multiPolygon");

    const one = create(GetSourceResponseSchema, { source: toProtoSource(records[0]) });
    await answer("application/proto", one);
    const decoded = fromBinary(GetSourceResponseSchema, toBinary(GetSourceResponseSchema, one));
    expect(equals(SourceSchema, decoded.source as never, toProtoSource(records[0]))).toBe(true);
  });

  it("leaves JSON answers and in-process calls with their Geometry messages", async () => {
    for (const contentType of ["application/grpc+json", "application/json", null]) {
      const one = create(GetSourceResponseSchema, { source: toProtoSource(makeFullRecord()) });
      await answer(contentType, one);
      expect(one.source?.geometry?.kind.case).toBe("multiPolygon");
      expect(one.$unknown).toBeUndefined();
    }
  });
});

describe("which answers are protobuf binary", () => {
  it.each([
    ["application/grpc", true],
    ["application/grpc+proto", true],
    ["application/GRPC+PROTO", true],
    ["application/grpc-web", true],
    ["application/grpc-web+proto", true],
    ["application/grpc-web-text+proto", true],
    ["application/proto", true],
    ["application/connect+proto", true],
    ["application/proto; charset=utf-8", true],
    ["application/grpc+json", false],
    ["application/grpc-web+json", false],
    ["application/json", false],
    ["application/connect+json", false],
    ["application/protobuf", false],
    ["application/grpc+protox", false],
    ["text/plain", false],
  ])("%s → %s", (contentType, binary) => {
    expect(answersInProtobufBinary(new Headers({ "content-type": contentType }))).toBe(binary);
  });

  it("a call without a Content-Type (the in-process REST call) is not binary", () => {
    expect(answersInProtobufBinary(new Headers())).toBe(false);
  });
});
