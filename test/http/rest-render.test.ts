import { describe, expect, it } from "vitest";
import {
  renderFeatureCollection,
  renderFeatureJson,
  renderRecordJson,
  renderRecordsJson,
} from "../../src/http/rest-render.js";
import type { SourceRecord } from "../../src/model/records.js";
import { makeFullRecord, makeRecord } from "../contract/fixtures.js";

const asRecord = (r: ReturnType<typeof makeRecord>): SourceRecord => r;

describe("renderRecordsJson", () => {
  it("writes [] for no records", () => {
    const body = renderRecordsJson([]);
    expect(body.toString("utf8")).toBe("[]");
  });

  it("writes exactly the bytes of the joined records, multi-byte characters included", () => {
    const records = [
      asRecord(makeFullRecord({ tags: ["é", "🌾 field", "日本"], methodology: "VM0042 v2.0 & co/? #1 = ü" })),
      asRecord(makeRecord({ altId: "plain-ascii" })),
      asRecord(makeRecord({ altId: "emoji-🌍-at-the-end", stewardId: "grower \u2028 line separator" })),
    ];
    const body = renderRecordsJson(records);
    const expected = `[${records.map(renderRecordJson).join(",")}]`;
    expect(body.length).toBe(Buffer.byteLength(expected, "utf8"));
    expect(body.toString("utf8")).toBe(expected);
    const parsed = JSON.parse(body.toString("utf8")) as { alt_id: string; tags: string[]; steward_id: string | null }[];
    expect(parsed.map((r) => r.alt_id)).toEqual(records.map((r) => r.altId));
    expect(parsed[0].tags).toEqual(["é", "🌾 field", "日本"]);
    expect(parsed[2].steward_id).toBe("grower \u2028 line separator");
  });

  it("renders the stored geometry text as it is", () => {
    const record = asRecord(makeRecord());
    Object.defineProperty(record, "geometryJson", {
      value: '{"type":"Polygon","coordinates":[[[1.10,2],[3,4],[5,6],[1.10,2]]]}',
    });
    const [rendered] = JSON.parse(renderRecordsJson([record]).toString("utf8")) as { geometry: unknown }[];
    expect(rendered.geometry).toEqual({
      type: "Polygon",
      coordinates: [
        [
          [1.1, 2],
          [3, 4],
          [5, 6],
          [1.1, 2],
        ],
      ],
    });
    expect(renderRecordsJson([record]).toString("utf8")).toContain(
      '"geometry":{"type":"Polygon","coordinates":[[[1.10,2]',
    );
  });
});

describe("GeoJSON (docs/api.md §12)", () => {
  const records = [
    asRecord(makeFullRecord({ tags: ["é", "🌾 field"], methodology: "VM0042" })),
    asRecord(makeRecord({ altId: "plain" })),
  ];

  it("a Feature has the record's id and geometry, and every other member of its JSON as properties", () => {
    for (const record of records) {
      const json = JSON.parse(renderRecordJson(record)) as Record<string, unknown>;
      const feature = JSON.parse(renderFeatureJson(record)) as Record<string, unknown>;
      const { id, geometry, ...properties } = json;
      expect(feature).toEqual({ type: "Feature", id, geometry, properties });
      expect(Object.keys(feature)).toEqual(["type", "id", "geometry", "properties"]);
      expect(Object.keys(feature.properties as object)).toEqual(Object.keys(properties));
    }
  });

  it("a FeatureCollection lists the features, numberReturned and the links, as exact UTF-8 bytes", () => {
    const next = { href: "/sources?f=geojson&page_token=abc", rel: "next", type: "application/geo+json" };
    const body = renderFeatureCollection(records, [next], { timeStamp: "2024-01-01T00:00:00Z" });
    const text = body.toString("utf8");
    expect(body.length).toBe(Buffer.byteLength(text, "utf8"));
    expect(JSON.parse(text)).toEqual({
      type: "FeatureCollection",
      features: records.map((r) => JSON.parse(renderFeatureJson(r))),
      timeStamp: "2024-01-01T00:00:00Z",
      numberReturned: 2,
      links: [next],
    });
  });

  it("an empty page is a FeatureCollection with no features", () => {
    expect(JSON.parse(renderFeatureCollection([], []).toString("utf8"))).toEqual({
      type: "FeatureCollection",
      features: [],
      numberReturned: 0,
      links: [],
    });
  });
});
