import { describe, expect, it } from "vitest";
import { COLUMNS, fromColumns, fromRow, toRow } from "../../src/store/sqlite/rows.js";
import { makeFullRecord, stored } from "../contract/fixtures.js";

describe("sqlite rows → records", () => {
  const record = makeFullRecord();
  const row = toRow(record);
  const columns = COLUMNS.map((column) => row[column]);

  it("maps every column (raw mode and object mode alike)", () => {
    expect(fromColumns(columns)).toEqual(stored(record));
    expect(fromRow(row)).toEqual(stored(record));
  });

  it("keeps the stored GeoJSON text, hidden from copies, and parses the geometry once, on first use", () => {
    const read = fromColumns(columns);
    expect(read.geometryJson).toBe(row.geometry);
    expect(Object.keys(read)).not.toContain("geometryJson");
    expect(JSON.stringify(read)).not.toContain("geometryJson");
    const first = read.geometry;
    expect(first).toEqual(record.geometry);
    expect(read.geometry).toBe(first);
    // A copy carries the geometry as a plain value, and nothing hidden.
    const copy = { ...read, conflict: true };
    expect(Object.getOwnPropertyDescriptor(copy, "geometry")?.value).toEqual(record.geometry);
    expect(copy.geometryJson).toBeUndefined();
    expect(Object.getOwnPropertySymbols(copy)).toEqual([]);
  });

  it("does not parse the geometry when nothing asks for it", () => {
    const broken = [...columns];
    broken[COLUMNS.indexOf("geometry")] = "{not json";
    const read = fromColumns(broken);
    expect(read.geometryJson).toBe("{not json");
    expect(read.id).toBe(record.id);
    expect(() => read.geometry).toThrow(SyntaxError);
  });
});
