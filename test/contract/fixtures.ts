import { geodesicAreaM2 } from "../../src/geo/area.js";
import { boundingBox } from "../../src/geo/bbox.js";
import type { MultiPolygonGeometry, PolygonGeometry } from "../../src/geo/types.js";
import type { Change } from "../../src/model/history.js";
import type { ListQuery } from "../../src/model/list-query.js";
import type { NewSourceRecord, SourceRecord, UnepOverlapRecord } from "../../src/model/records.js";
import { ring } from "../support/geometry-fixtures.js";
import { NO_OPTIONAL_FIELDS } from "../support/source-records.js";

/** 2024-01-01T00:00:00.000Z; fixtures count up from here so insertion order is created order. */
export const BASE_TIME = Date.UTC(2024, 0, 1);

let sequence = 0;

/** A closed, counter-clockwise square with its south-west corner at (x, y). */
export function square(x: number, y: number, size = 1): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(x, y, x + size, y + size)] };
}

/**
 * Two parts, the first with a hole, full-precision decimals and a consecutive duplicate position:
 * everything a store might be tempted to normalise.
 */
export const detailedMultiPolygon: MultiPolygonGeometry = {
  type: "MultiPolygon",
  coordinates: [
    [
      [
        [-73.98765432109876, 40.12345678901234],
        [-73.5, 40.12345678901234],
        [-73.5, 40.12345678901234],
        [-73.5, 40.9],
        [-73.98765432109876, 40.9],
        [-73.98765432109876, 40.12345678901234],
      ],
      [
        [-73.8, 40.3],
        [-73.8, 40.6],
        [-73.6, 40.6],
        [-73.6, 40.3],
        [-73.8, 40.3],
      ],
    ],
    [
      [
        [179.5, -89.5],
        [180, -89.5],
        [180, -89],
        [179.5, -89],
        [179.5, -89.5],
      ],
    ],
  ],
};

export const sampleUnepOverlap: UnepOverlapRecord = {
  dataset: "WDPA_Jan2024",
  overlaps: true,
  areaM2: 1234567.891,
  fraction: 0.125,
  areas: [
    { id: "555", name: "Reserva Río Ñandú", designation: "National Park", iucnCategory: "II", areaM2: 1000000.5 },
    { id: "777", name: "Marsh", designation: "Ramsar Site", iucnCategory: "Not Reported", areaM2: 234567.391 },
  ],
};

/**
 * A valid record with unique id and alt_id and a created time after every earlier fixture's. Every
 * optional field is null or empty unless overridden; `bbox` follows the final `geometry`.
 */
export function makeRecord(overrides: Partial<NewSourceRecord> = {}): NewSourceRecord {
  sequence += 1;
  const geometry = overrides.geometry ?? square(sequence % 170, sequence % 80);
  const createdAt = overrides.createdAt ?? BASE_TIME + sequence;
  return {
    id: `src_${String(sequence).padStart(26, "0")}`,
    accountId: "acct_a",
    altId: `alt-${sequence}`,
    ...NO_OPTIONAL_FIELDS,
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
    createdBy: "fixture-client",
    updatedBy: "fixture-client",
    updatedAt: createdAt,
    ...overrides,
    geometry,
    createdAt,
    bbox: overrides.bbox ?? boundingBox(geometry),
    areaM2: overrides.areaM2 ?? geodesicAreaM2(geometry),
  };
}

/** A record with every optional field set. */
export function makeFullRecord(overrides: Partial<NewSourceRecord> = {}): NewSourceRecord {
  return makeRecord({
    methodology: "VM0042",
    tags: ["pilot", "north field", "ünïcode ✓"],
    stewardId: "steward-17",
    projectId: "project-3",
    outcomeReportingYear: 2025,
    sourceType: "FIELD",
    attributeType: ["CARBON_REMOVAL", "BIODIVERSITY"],
    geometrySource: "CUSTODIAN_DRAWN",
    geometry: structuredClone(detailedMultiPolygon),
    startAt: Date.UTC(2024, 2, 1, 12, 30, 15, 123),
    endAt: Date.UTC(9999, 11, 31, 23, 59, 59, 999),
    createdBy: "creator-app",
    updatedBy: "updater-app",
    conflict: true,
    unepOverlap: structuredClone(sampleUnepOverlap),
    ...overrides,
  });
}

/** What a store returns for `record`. */
export function stored({ bbox: _bbox, areaM2: _areaM2, ...record }: NewSourceRecord): SourceRecord {
  return record;
}

/** A list query with no filters and a page large enough for any fixture set. */
export function listQuery(accountId: string | null, filters: Partial<ListQuery> = {}): ListQuery {
  return { accountId, attributeTypes: [], limit: 1000, offset: 0, ...filters };
}

/** The ids of records, in their order. */
export function ids(records: readonly { id: string }[]): string[] {
  return records.map((r) => r.id);
}

/** Who deletes in the fixtures, unless a test names someone. */
export const DELETER = "fixture-deleter";

/**
 * The change argument of a delete (docs/api.md §14): `by` the fixture deleter and `at` a time
 * after every earlier fixture's and before every later one's unless overridden, as a request's
 * time would be (a store never records a change before the last one it committed).
 */
export function change(overrides: Partial<Change> = {}): Change {
  sequence += 1;
  return { by: DELETER, at: BASE_TIME + sequence, ...overrides };
}

/** `records` in the order a store must be given them to keep their times: by createdAt (stable). */
export function inCreationOrder<T extends { createdAt: number }>(records: readonly T[]): T[] {
  return [...records].sort((a, b) => a.createdAt - b.createdAt);
}
