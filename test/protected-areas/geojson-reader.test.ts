import { afterAll, describe, expect, it } from "vitest";
import { NotFeatureCollectionError } from "../../src/protected-areas/errors.js";
import { type FeatureItem, readFeatureCollection } from "../../src/protected-areas/geojson-reader.js";
import { featureCollection, paFeature, rect, tempDir } from "./fixtures.js";

const temp = tempDir("pa-reader-");
afterAll(() => temp.remove());

async function readAll(path: string, highWaterMark?: number): Promise<FeatureItem[]> {
  const items: FeatureItem[] = [];
  for await (const item of readFeatureCollection(path, { highWaterMark })) items.push(item);
  return items;
}

describe("readFeatureCollection", () => {
  const features = [
    paFeature(1, rect(0, 0, 1, 1), { NAME: 'Ñandú "quoted" \\ \u00e9 😀' }),
    paFeature("2", { type: "MultiPolygon", coordinates: [rect(2, 2, 3, 3).coordinates] }),
    42,
    null,
    "text",
    [1, [2, { a: 3 }]],
    { type: "Feature", properties: null, geometry: null, extra: { deep: [[[1.5e-3, -2e2]]] } },
  ];

  it("yields every element of features, in order, as JSON.parse would, skipping other members", async () => {
    const path = temp.write(
      "mixed.geojson",
      featureCollection(features, {
        name: "x",
        crs: { type: "name", properties: { name: "EPSG:4326" } },
        bbox: [0, 0, 3, 3],
      }),
    );
    const items = await readAll(path);
    expect(items.map((i) => i.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(items.map((i) => i.value)).toEqual(features);
  });

  it("gives the same result whatever the chunk size (tokens and UTF-8 split across chunks)", async () => {
    const path = temp.write("chunks.geojson", featureCollection(features));
    expect(await readAll(path, 7)).toEqual(await readAll(path));
    expect(await readAll(path, 1)).toEqual(await readAll(path));
  });

  it("accepts members in any order, a byte-order mark, and an empty features array", async () => {
    const reordered = temp.write(
      "reordered.geojson",
      `\uFEFF{"features":[${JSON.stringify(paFeature(9, rect(0, 0, 1, 1)))}],"type":"FeatureCollection"}`,
    );
    expect((await readAll(reordered)).map((i) => i.index)).toEqual([0]);
    expect(await readAll(temp.write("empty-features.geojson", featureCollection([])))).toEqual([]);
  });

  it.each([
    ["an empty file", "", /empty/],
    ["a top-level array", "[1,2]", /top-level JSON value is not an object/],
    ["a Feature", JSON.stringify(paFeature(1, rect(0, 0, 1, 1))), /"type" is "Feature"/],
    ["a non-string type", '{"type":5,"features":[]}', /"type" is not a string/],
    [
      "features that are not an array",
      '{"type":"FeatureCollection","features":{}}',
      /"features" member is not an array/,
    ],
    ["no type member (seen at the end)", '{"features":[]}', /no "type": "FeatureCollection"/],
    ["no features member", '{"type":"FeatureCollection"}', /no "features" array/],
    ["invalid JSON", '{"type":"FeatureCollection","features":[{]}', /not valid JSON/],
    [
      "a truncated file",
      '{"type":"FeatureCollection","features":[{"type":"Feature"',
      /ends before its JSON is complete/,
    ],
  ])("refuses %s with a NotFeatureCollectionError", async (_label, text, message) => {
    const path = temp.write(`bad-${Math.random()}.json`, text);
    const error = await readAll(path).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFeatureCollectionError);
    expect((error as Error).message).toMatch(message);
  });
});
