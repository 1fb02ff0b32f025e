import type { Source } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { ListPage } from "../ledger/ledger.js";
import type { SourceRecord } from "../model/records.js";
import { geometryWireSize } from "./source-wire.js";

/**
 * The most bytes of sources one list or search answer carries (docs/api.md §12): under 4 MiB, the
 * default receive limit of common gRPC clients (grpc-js, grpc-go, grpcio), with room left for the
 * next_page_token and the message's framing.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024 - 4 * 1024;

/**
 * What each part of a Source costs at most in one codec. Generous everywhere but the geometry,
 * which is nearly all of a large source and is counted closely.
 */
interface SizeWeights {
  /** Every fixed-size field (times, enums, numbers, the flag), member names and framing. */
  fixed: number;
  text(text: string | undefined): number;
  /** One value of the repeated attribute_type. */
  attributeType: number;
  /** One protected area of the overlap, besides its texts. */
  area: number;
  geometry(source: Source): number;
}

const BINARY: SizeWeights = {
  fixed: 256,
  // Tag, length (at most 5 bytes) and up to 3 UTF-8 bytes a UTF-16 unit: never less than the encoding.
  text: (text) => (text === undefined ? 0 : 6 + 3 * text.length),
  attributeType: 11,
  area: 17,
  // The stored text's wire size when the store keeps the text (no Geometry message built).
  geometry: geometryWireSize,
};

/** A double as JSON writes it: at most 24 characters (`-1.7976931348623157e+308`) and a comma. */
const JSON_NUMBER = 25;

const JSON_MAPPING: SizeWeights = {
  fixed: 1024,
  // Quotes, a comma, and up to 6 bytes a UTF-16 unit (`\u0001`).
  text: (text) => (text === undefined ? 0 : 4 + 6 * text.length),
  attributeType: 48,
  area: 128 + JSON_NUMBER,
  geometry({ geometry }) {
    if (geometry === undefined) return 0;
    const { kind } = geometry;
    const polygons = kind.case === "polygon" ? [kind.value] : kind.case === "multiPolygon" ? kind.value.polygons : [];
    let size = 64;
    for (const polygon of polygons) {
      size += 16;
      for (const ring of polygon.rings) size += 32 + JSON_NUMBER * ring.coordinates.length;
    }
    return size;
  },
};

function sizeBound(source: Source, w: SizeWeights): number {
  let size = w.fixed + w.geometry(source);
  const texts = [source.id, source.altId, source.methodology, source.stewardId, source.projectId, source.accountId];
  for (const text of [...texts, source.createdBy, source.updatedBy, ...source.tags]) size += w.text(text);
  size += w.attributeType * source.attributeType.length;
  const overlap = source.unepOverlap;
  if (overlap) {
    size += w.fixed + w.text(overlap.dataset);
    for (const area of overlap.areas) {
      size += w.area + w.text(area.id) + w.text(area.name) + w.text(area.designation) + w.text(area.iucnCategory);
    }
  }
  return size;
}

/**
 * An upper bound of the bytes `source` adds to a protobuf answer: its geometry exactly, every other
 * field generously. Cheap: no encoding.
 */
export const sourceSizeBound = (source: Source): number => sizeBound(source, BINARY);

/** An upper bound of the bytes `source` adds to an answer in protobuf's JSON mapping. */
export const sourceJsonSizeBound = (source: Source): number => sizeBound(source, JSON_MAPPING);

/** The codec an answer is written in: protobuf binary, or protobuf's JSON mapping. */
export type AnswerCodec = "binary" | "json";

/**
 * A page as Source messages, cut where the next source would take the answer past
 * MAX_PAGE_BYTES in `codec` (never before the first: one source is at most ~1.6 MB in binary,
 * but up to ~5.0 MB in JSON, past the limit; docs/api.md §12): the token then resumes after the
 * last source sent, so no record is skipped.
 */
export function cappedPage(
  page: ListPage,
  toSource: (record: SourceRecord) => Source,
  codec: AnswerCodec = "binary",
): { sources: Source[]; nextPageToken: string } {
  const sizeBound = codec === "json" ? sourceJsonSizeBound : sourceSizeBound;
  const sources: Source[] = [];
  let bytes = 0;
  for (const record of page.records) {
    const source = toSource(record);
    bytes += sizeBound(source);
    if (sources.length > 0 && bytes > MAX_PAGE_BYTES) {
      return { sources, nextPageToken: page.tokenAfter(page.records[sources.length - 1]) };
    }
    sources.push(source);
  }
  return { sources, nextPageToken: page.nextPageToken ?? "" };
}
