/**
 * Geometry wire bytes straight from stored GeoJSON text (geo/geojson-wire.ts), and from the positions (geometryWireBytes), against the encoder
 * of parsed geometries: the same bytes for every number form JSON.stringify writes, every shape,
 * and random geometries; anything but the store's plain form is declined.
 */
import { describe, expect, it } from "vitest";
import { geoJsonWire, geometryWireBytes } from "../../src/geo/geojson-wire.js";
import { encodeGeometry } from "../../src/geo/geometry-wire.js";
import type { Position, SourceGeometry } from "../../src/geo/types.js";
import { geometryToProto } from "../../src/rpc/geometry-codec.js";
import { prng } from "../support/geometry-fixtures.js";

function fromText(text: string): Buffer | undefined {
  const wire = geoJsonWire(text);
  if (wire === undefined) return undefined;
  const out = new Uint8Array(wire.size + 7);
  const end = wire.write(out, 3);
  expect(end).toBe(3 + wire.size);
  return Buffer.from(out.subarray(3, end));
}

function same(geometry: SourceGeometry): void {
  sameText(JSON.stringify(geometry));
  // Written from the positions: the bytes of the text the store keeps (-0 as JSON writes it, 0).
  const fromPositions = Buffer.from(geometryWireBytes(geometry));
  expect(
    fromPositions.equals(fromText(JSON.stringify(geometry)) as Buffer),
    JSON.stringify(geometry).slice(0, 200),
  ).toBe(true);
}

function sameText(text: string): void {
  const expected = Buffer.from(encodeGeometry(geometryToProto(JSON.parse(text) as SourceGeometry)));
  expect(fromText(text)?.equals(expected), text.slice(0, 200)).toBe(true);
}

const ring = (...values: number[]): Position[] => {
  const out: Position[] = [];
  for (let i = 0; i < values.length; i += 2) out.push([values[i], values[i + 1]]);
  return out;
};

describe("geoJsonWire writes what the parsed geometry's encoder writes; geometryWireBytes the same from the positions", () => {
  it("every number form: integers, decimals, exponents, -0, 16–17 digits, tiny and huge", () => {
    same({
      type: "Polygon",
      coordinates: [
        ring(
          0,
          -0,
          1,
          -1,
          179.9999999,
          -89.123,
          1e-7,
          -2.5e-10,
          0.1 + 0.2,
          1 / 3,
          -123.45678901234567,
          5e-324,
          1.7976931348623157e308,
          12345678901234567000,
          0.000001,
          100,
          0,
          -0,
        ),
      ],
    });
  });

  it("numbers JSON allows but JSON.stringify does not write: 20 digits, 23 decimals, E, e+", () => {
    sameText(
      '{"type":"Polygon","coordinates":[[[12345678901234567890,0.12345678901234567890123],[1E5,-1e+2],[0.0000000000000000000000001,-0.0]]]}',
    );
  });

  it("polygons with holes, empty rings, MultiPolygons with empty parts", () => {
    same({
      type: "Polygon",
      coordinates: [ring(0, 0, 1, 0, 1, 1, 0, 0), ring(0.2, 0.2, 0.3, 0.2, 0.3, 0.3, 0.2, 0.2)],
    });
    same({ type: "Polygon", coordinates: [] });
    same({ type: "Polygon", coordinates: [[]] });
    same({ type: "MultiPolygon", coordinates: [] });
    same({ type: "MultiPolygon", coordinates: [[], [ring(0, 0, 1, 0, 1, 1, 0, 0)], [[], []]] });
  });

  it("2,000 random geometries, coordinates at 7 decimals and at full precision", () => {
    const random = prng(29);
    for (let i = 0; i < 2_000; i++) {
      const precise = i % 2 === 0;
      const value = (span: number) => {
        const v = (random() - 0.5) * span;
        return precise ? v : Math.round(v * 1e7) / 1e7;
      };
      const makeRing = () =>
        Array.from({ length: 1 + Math.floor(random() * 30) }, (): Position => [value(360), value(180)]);
      const polygon = () => Array.from({ length: 1 + Math.floor(random() * 3) }, makeRing);
      same(
        random() < 0.5
          ? { type: "Polygon", coordinates: polygon() }
          : { type: "MultiPolygon", coordinates: Array.from({ length: 1 + Math.floor(random() * 3) }, polygon) },
      );
    }
  });

  it.each([
    ['{"type":"Point","coordinates":[1,2]}'],
    ['{"coordinates":[[[0,0],[1,0],[0,0]]],"type":"Polygon"}'],
    ['{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]],"bbox":[0,0,1,0]}'],
    ['{"type":"Polygon","coordinates":[[[0, 0],[1,0],[0,0]]]}'],
    ['{"type":"Polygon","coordinates":[[[0,0,5],[1,0],[0,0]]]}'],
    ['{"type":"Polygon","coordinates":[[[0,"1"],[1,0],[0,0]]]}'],
    ['{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]} '],
    ['{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]'],
    ['{"type":"MultiPolygon","coordinates":[[[0,0],[1,0],[0,0]]]}'],
    [""],
  ])("declines %s (the caller parses it instead)", (text) => {
    expect(geoJsonWire(text)).toBeUndefined();
  });
});
