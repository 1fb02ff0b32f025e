/**
 * The sandbox's compact geometry (src/store/sandbox/packed-geometry.ts): one Float64Array per
 * geometry, read back exactly as submitted, through the store port as well as directly.
 */
import { afterEach, describe, expect, it } from "vitest";
import { countPositions } from "../../src/geo/parts.js";
import type { MultiPolygonGeometry, PolygonGeometry, SourceGeometry } from "../../src/geo/types.js";
import { createSandboxStore, type SandboxSourceStore } from "../../src/store/sandbox/index.js";
import {
  packedGeometryJson,
  packedPositions,
  packGeometry,
  unpackGeometry,
} from "../../src/store/sandbox/packed-geometry.js";
import { detailedMultiPolygon, listQuery, makeFullRecord, makeRecord, stored } from "../contract/fixtures.js";

/** -0 in both axes, the smallest subnormal, values that round-trip only with 17 digits, duplicates. */
const signedZeroPolygon: PolygonGeometry = {
  type: "Polygon",
  coordinates: [
    [
      [-0, -0],
      [5e-324, -0],
      [0.1 + 0.2, 1e-7],
      [0.30000000000000004, 0.1 + 0.2],
      [0.30000000000000004, 0.1 + 0.2],
      [-0, 0.1 + 0.2],
      [-0, -0],
    ],
  ],
};

/** Two parts, each with holes, and extreme coordinates. */
const multiWithHoles: MultiPolygonGeometry = {
  type: "MultiPolygon",
  coordinates: [
    [
      [
        [-180, -90],
        [180, -90],
        [180, 90],
        [-180, 90],
        [-180, -90],
      ],
      [
        [-10, -10],
        [-10, 10],
        [10, 10],
        [10, -10],
        [-10, -10],
      ],
      [
        [20.123456789012344, 20],
        [20.123456789012344, 30],
        [30, 30],
        [30, 20],
        [20.123456789012344, 20],
      ],
    ],
    [
      [
        [-1e-9, -0],
        [1e-9, -0],
        [1e-9, 1e-9],
        [-1e-9, -0],
      ],
    ],
  ],
};

const GEOMETRIES: [string, SourceGeometry][] = [
  ["a Polygon with -0, subnormals and repeated positions", signedZeroPolygon],
  ["a MultiPolygon whose parts have holes", multiWithHoles],
  ["the contract's detailed MultiPolygon", detailedMultiPolygon],
];

describe("packed geometry", () => {
  it.each(GEOMETRIES)("%s comes back exactly: same numbers to the bit, same order, same type", (_name, geometry) => {
    const packed = packGeometry(geometry);
    // toStrictEqual compares numbers with Object.is: -0 is not 0.
    expect(unpackGeometry(packed)).toStrictEqual(geometry);
    expect(packedPositions(packed)).toBe(countPositions(geometry));
  });

  it.each(GEOMETRIES)("%s writes the JSON text JSON.stringify writes", (_name, geometry) => {
    expect(packedGeometryJson(packGeometry(geometry))).toBe(JSON.stringify(geometry));
  });

  it("holds -0 as -0, and 16 bytes a position plus 8 a ring, polygon and geometry header", () => {
    const packed = packGeometry(signedZeroPolygon);
    expect(Object.is(packed[packed.length - 1], -0)).toBe(true);
    // [kind, polygons, rings, positions] + 7 positions × 2.
    expect(packed.byteLength).toBe(8 * (4 + 14));
    expect(packGeometry(multiWithHoles).byteLength).toBe(8 * (2 + 1 + 3 + 1 + 1 + 2 * 19));
  });

  it("builds a fresh GeoJSON each time: changing one changes nothing held", () => {
    const packed = packGeometry(multiWithHoles);
    const first = unpackGeometry(packed);
    (first as MultiPolygonGeometry).coordinates[0][0][0][0] = 99;
    first.coordinates.pop();
    expect(unpackGeometry(packed)).toStrictEqual(multiWithHoles);
  });

  it("keeps a one-part MultiPolygon a MultiPolygon", () => {
    const onePart: MultiPolygonGeometry = { type: "MultiPolygon", coordinates: [signedZeroPolygon.coordinates] };
    expect(unpackGeometry(packGeometry(onePart))).toStrictEqual(onePart);
    expect(packedGeometryJson(packGeometry(onePart))).toBe(JSON.stringify(onePart));
  });
});

describe("the sandbox store hands the geometry back as submitted", () => {
  let store: SandboxSourceStore;
  afterEach(async () => store.close());

  it("from insertMany, get and list alike, -0 and holes included", async () => {
    store = createSandboxStore({ ttlMs: 60_000 });
    const records = [
      makeRecord({ accountId: "a", geometry: structuredClone(signedZeroPolygon) }),
      makeFullRecord({ accountId: "a", geometry: structuredClone(multiWithHoles) }),
    ];
    const inserted = await store.insertMany(records);
    const listed = await store.list(listQuery("a"));
    for (const [i, record] of records.entries()) {
      expect(inserted[i]).toStrictEqual(stored(record));
      expect(await store.get(record.id, "a")).toStrictEqual(stored(record));
      expect(listed.find((r) => r.id === record.id)).toStrictEqual(stored(record));
    }
  });

  it("offers the GeoJSON text for REST to splice in, equal to JSON.stringify of the geometry", async () => {
    store = createSandboxStore({ ttlMs: 60_000 });
    const record = makeRecord({ accountId: "a", geometry: structuredClone(multiWithHoles) });
    await store.insertMany([record]);
    const got = await store.get(record.id, "a");
    expect(got?.geometryJson).toBe(JSON.stringify(multiWithHoles));
    // Hidden from copies and comparisons: only the plain fields show.
    expect(Object.keys(got ?? {})).not.toContain("geometryJson");
    expect({ ...got }).toStrictEqual(stored(record));
  });

  it("builds the GeoJSON once per record handed out, and a caller's change stays with that record", async () => {
    store = createSandboxStore({ ttlMs: 60_000 });
    const record = makeRecord({ accountId: "a", geometry: structuredClone(signedZeroPolygon) });
    await store.insertMany([record]);
    const got = await store.get(record.id, "a");
    expect(got?.geometry).toBe(got?.geometry);
    got?.geometry.coordinates.pop();
    expect(got?.geometry.coordinates).toHaveLength(0);
    // The caller's change is not the store's: the next read and the JSON text are as submitted.
    expect((await store.get(record.id, "a"))?.geometry).toStrictEqual(signedZeroPolygon);
    expect(got?.geometryJson).toBe(JSON.stringify(signedZeroPolygon));
  });

  it("does not keep the caller's geometry: changing it after the insert changes nothing stored", async () => {
    store = createSandboxStore({ ttlMs: 60_000 });
    const record = makeRecord({ accountId: "a", geometry: structuredClone(multiWithHoles) });
    await store.insertMany([record]);
    (record.geometry as MultiPolygonGeometry).coordinates[1][0][0][0] = 42;
    expect((await store.get(record.id, "a"))?.geometry).toStrictEqual(multiWithHoles);
  });
});
