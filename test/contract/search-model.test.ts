/**
 * The store contract's brute-force model (search-model.ts) is what it claims to be: enough random
 * sources and areas, valid geometries, answers of every size, and many matches that only touch,
 * many sources rejected on their geometry though their box meets the area.
 */
import { describe, expect, it } from "vitest";
import { checkGeometry } from "../../src/geo/validity.js";
import { buildSearchModel, searchModel } from "./search-model.js";

describe("the store contract's search model", () => {
  const model = searchModel();

  it("has at least 2,000 sources and 300 queries, with distinct ids and ties on created time", () => {
    expect(model.records.length).toBeGreaterThanOrEqual(2_000);
    expect(model.cases.length).toBeGreaterThanOrEqual(300);
    expect(new Set(model.records.map((r) => r.id)).size).toBe(model.records.length);
    expect(new Set(model.records.map((r) => r.createdAt)).size).toBeLessThan(model.records.length / 2);
  });

  it("holds only valid geometries, sources and polygon areas alike", () => {
    const invalid = model.records.filter((r) => checkGeometry(r.geometry).length > 0).map((r) => r.geometry);
    for (const { query } of model.cases) {
      const area = query.intersects;
      if (area && area.type !== "Point" && area.type !== "Box" && checkGeometry(area).length > 0) invalid.push(area);
    }
    expect(invalid.slice(0, 3)).toEqual([]);
  });

  it("covers every kind of source and area, degenerate boxes, and bbox with intersects", () => {
    const sourceKinds = new Set(model.records.map((r) => r.geometry.type));
    expect([...sourceKinds].sort()).toEqual(["MultiPolygon", "Polygon"]);
    expect(
      model.records.filter((r) => r.geometry.type === "Polygon" && r.geometry.coordinates.length > 1).length,
    ).toBeGreaterThan(100);
    const areaKinds = new Map<string, number>();
    for (const { query } of model.cases) {
      const kind = query.intersects?.type;
      if (kind) areaKinds.set(kind, (areaKinds.get(kind) ?? 0) + 1);
    }
    for (const kind of ["Point", "Box", "Polygon", "MultiPolygon"])
      expect(areaKinds.get(kind), kind).toBeGreaterThan(10);
    const boxes = model.cases.flatMap(({ query }) => [
      query.bbox,
      query.intersects?.type === "Box" ? query.intersects.box : undefined,
    ]);
    const degenerate = boxes.filter((b) => b !== undefined && (b.minX === b.maxX || b.minY === b.maxY));
    expect(degenerate.length).toBeGreaterThan(20);
    expect(model.cases.filter(({ query }) => query.bbox && query.intersects).length).toBeGreaterThan(50);
    expect(model.cases.filter(({ query }) => query.accountId !== null).length).toBeGreaterThan(50);
  });

  it("has empty answers, small ones and large ones, and exercises exactness", () => {
    const sizes = model.cases.map((c) => c.expected.length);
    expect(sizes.filter((n) => n === 0).length).toBeGreaterThan(10);
    expect(sizes.filter((n) => n > 0 && n <= 7).length).toBeGreaterThan(50);
    expect(sizes.filter((n) => n > 50).length).toBeGreaterThan(10);
    expect(Math.max(...sizes)).toBeLessThan(1_000);
    expect(model.touchingOnly).toBeGreaterThan(500);
    expect(model.envelopeOnly).toBeGreaterThan(500);
  });

  it("is the same for the same seed, and another for another", () => {
    expect(buildSearchModel(7, 300, 40)).toEqual(buildSearchModel(7, 300, 40));
    expect(buildSearchModel(8, 300, 40).cases.map((c) => c.expected)).not.toEqual(
      buildSearchModel(7, 300, 40).cases.map((c) => c.expected),
    );
  });
});
