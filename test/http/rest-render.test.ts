import { describe, expect, it } from "vitest";
import { renderRecordJson, renderRecordsJson } from "../../src/http/rest-render.js";
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
