import type { BoundingBox, SourceGeometry } from "../geo/types.js";

/** Protected-area overlap of a source, as docs/api.md §8 shapes it. */
export interface UnepOverlapRecord {
  dataset: string;
  overlaps: boolean;
  areaM2: number;
  fraction: number;
  areas: { id: string; name: string; designation: string; iucnCategory: string; areaM2: number }[];
}

/** The same overlap with the API's snake_case keys: the REST body, and the MongoDB document. */
export interface UnepOverlapJson {
  dataset: string;
  overlaps: boolean;
  area_m2: number;
  fraction: number;
  areas: { id: string; name: string; designation: string; iucn_category: string; area_m2: number }[];
}

export function unepOverlapJson(overlap: UnepOverlapRecord): UnepOverlapJson {
  return {
    dataset: overlap.dataset,
    overlaps: overlap.overlaps,
    area_m2: overlap.areaM2,
    fraction: overlap.fraction,
    areas: overlap.areas.map((a) => ({
      id: a.id,
      name: a.name,
      designation: a.designation,
      iucn_category: a.iucnCategory,
      area_m2: a.areaM2,
    })),
  };
}

/** What the service hands a store to insert. Enum-like fields hold the API's upper-case names. */
export interface NewSourceRecord {
  id: string;
  accountId: string;
  altId: string;
  methodology: string | null;
  tags: string[];
  stewardId: string | null;
  projectId: string | null;
  outcomeReportingYear: number | null;
  sourceType: string | null;
  attributeType: string[];
  geometrySource: string | null;
  geometry: SourceGeometry;
  /** Bounding box of `geometry`, kept in the store's spatial index. */
  bbox: BoundingBox;
  /** Geodesic area of `geometry` in square metres, kept for conflict decisions. */
  areaM2: number;
  /** Epoch milliseconds. */
  startAt: number;
  endAt: number;
  createdBy: string;
  updatedBy: string;
  createdAt: number;
  updatedAt: number;
  conflict: boolean;
  unepOverlap: UnepOverlapRecord | null;
}

/** A stored source. */
export type SourceRecord = Omit<NewSourceRecord, "bbox" | "areaM2"> & {
  /**
   * The geometry's GeoJSON text exactly as stored, when the store keeps it as text: the REST
   * adapter splices it into its answer instead of parsing and serialising it again.
   */
  readonly geometryJson?: string;
  /**
   * The `sourceledger.v2.Geometry` message's protobuf bytes, exactly what encoding the geometry
   * gives, when the read asked for them (RecordRead.geometryWire) and the store keeps them: a
   * binary gRPC or Connect answer copies them instead of encoding the geometry again.
   */
  readonly geometryWire?: Uint8Array;
};

/** How a caller will use the records it reads: a store may attach what saves it work. */
export interface RecordRead {
  /**
   * The caller writes each geometry as protobuf (a binary gRPC or Connect answer): a store that
   * keeps the Geometry message's wire bytes attaches them (SourceRecord.geometryWire). Others
   * ignore it.
   */
  geometryWire?: boolean;
}
