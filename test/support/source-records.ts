/** One source record with every field set, non-ASCII text and pre-1970 and millisecond times included: for the RPC encoders' tests. */
import type { SourceDraft } from "../../src/ledger/commands.js";
import type { SourceRecord } from "../../src/model/records.js";

export const FULL_SOURCE_RECORD: SourceRecord = {
  id: "src_01JBZ5Q0000000000000000000",
  accountId: "acct-1",
  altId: "field-7",
  methodology: "VM0042",
  tags: ["north", "irrigated"],
  stewardId: "steward-3",
  projectId: "project-9",
  outcomeReportingYear: 2025,
  sourceType: "FIELD",
  attributeType: ["CARBON_REMOVAL", "WATER_QUALITY"],
  geometrySource: "AUTHORITATIVE_GIS",
  geometry: {
    type: "MultiPolygon",
    coordinates: [
      [
        [
          [1, 1],
          [2, 1],
          [2, 2],
          [1, 1],
        ],
      ],
    ],
  },
  startAt: Date.parse("2024-01-01T00:00:00Z"),
  endAt: Date.parse("2025-06-30T12:34:56.789Z"),
  createdBy: "Client One",
  updatedBy: "Client Two",
  createdAt: 1_795_702_121_984,
  updatedAt: -1_500,
  conflict: true,
  unepOverlap: {
    dataset: "WDPA 2026-10",
    overlaps: true,
    areaM2: 1234.5,
    fraction: 0.25,
    areas: [{ id: "555", name: "Réserve naturelle", designation: "National Park", iucnCategory: "II", areaM2: 1234.5 }],
  },
};

/** Every optional field of a source as written (a draft) unset, every list empty: spread over a draft for its bare form. */
export const NO_OPTIONAL_DRAFT_FIELDS = {
  methodology: null,
  tags: [],
  stewardId: null,
  projectId: null,
  outcomeReportingYear: null,
  sourceType: null,
  attributeType: [],
  geometrySource: null,
} satisfies Partial<SourceDraft>;

/** Every optional field of a record unset, every list empty, no flag: spread over a record for its bare form. */
export const NO_OPTIONAL_FIELDS = {
  ...NO_OPTIONAL_DRAFT_FIELDS,
  conflict: false,
  unepOverlap: null,
} satisfies Partial<SourceRecord>;
