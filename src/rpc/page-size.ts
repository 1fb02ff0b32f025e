import type { Geometry, Source } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { ListPage } from "../ledger/ledger.js";
import type { SourceRecord } from "../model/records.js";
import { geometrySize } from "./geometry-wire.js";

/**
 * The most bytes of sources one list or search answer carries (docs/api.md §12): under 4 MiB, the
 * default receive limit of common gRPC clients (grpc-js, grpc-go, grpcio), with room left for the
 * next_page_token and the message's framing.
 */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024 - 4 * 1024;

/** Tag, length (at most 5 bytes) and up to 3 UTF-8 bytes a UTF-16 unit: never less than the encoding. */
const textBound = (text: string | undefined) => (text === undefined ? 0 : 6 + 3 * text.length);
/** Every fixed-size field of a Source (times, enums, numbers, the flag) and the framing, with room to spare. */
const FIXED_BOUND = 256;
/** An enum value of a repeated field, and a double or a bool of the overlap, with their tags. */
const SCALAR_BOUND = 11;

/**
 * An upper bound of the bytes `source` adds to an answer: its geometry exactly (it is nearly all
 * of a large source), every other field generously. Cheap: no encoding.
 */
export function sourceSizeBound(source: Source): number {
  let size = FIXED_BOUND + (source.geometry ? geometrySize(source.geometry) : 0);
  for (const text of [source.id, source.altId, source.methodology, source.stewardId, source.projectId]) {
    size += textBound(text);
  }
  for (const text of [source.accountId, source.createdBy, source.updatedBy, ...source.tags]) size += textBound(text);
  size += SCALAR_BOUND * source.attributeType.length;
  const overlap = source.unepOverlap;
  if (overlap) {
    size += FIXED_BOUND + textBound(overlap.dataset);
    for (const area of overlap.areas) {
      size += 6 + SCALAR_BOUND + textBound(area.id) + textBound(area.name);
      size += textBound(area.designation) + textBound(area.iucnCategory);
    }
  }
  return size;
}

/** The codec an answer is written in: protobuf binary, or protobuf's JSON mapping. */
export type AnswerCodec = "binary" | "json";

/** A string in JSON: quotes, a comma, and up to 6 bytes a UTF-16 unit (`\u0001`). */
const jsonTextBound = (text: string | undefined) => (text === undefined ? 0 : 4 + 6 * text.length);
/** Every member name, the four times, the enum names and the braces of a Source, with room to spare. */
const JSON_FIXED_BOUND = 1024;
/** A double as JSON writes it: at most 24 characters (`-1.7976931348623157e+308`) and a comma. */
const JSON_NUMBER_BOUND = 25;

function geometryJsonBound(geometry: Geometry | undefined): number {
  if (geometry === undefined) return 0;
  const polygons =
    geometry.kind.case === "polygon"
      ? [geometry.kind.value]
      : geometry.kind.case === "multiPolygon"
        ? geometry.kind.value.polygons
        : [];
  let size = 64;
  for (const polygon of polygons) {
    size += 16;
    for (const ring of polygon.rings) size += 32 + JSON_NUMBER_BOUND * ring.coordinates.length;
  }
  return size;
}

/** An upper bound of the bytes `source` adds to an answer in protobuf's JSON mapping. */
export function sourceJsonSizeBound(source: Source): number {
  let size = JSON_FIXED_BOUND + geometryJsonBound(source.geometry);
  for (const text of [source.id, source.altId, source.methodology, source.stewardId, source.projectId]) {
    size += jsonTextBound(text);
  }
  for (const text of [source.accountId, source.createdBy, source.updatedBy, ...source.tags]) {
    size += jsonTextBound(text);
  }
  size += 48 * source.attributeType.length;
  const overlap = source.unepOverlap;
  if (overlap) {
    size += JSON_FIXED_BOUND + jsonTextBound(overlap.dataset);
    for (const area of overlap.areas) {
      size += 128 + JSON_NUMBER_BOUND + jsonTextBound(area.id) + jsonTextBound(area.name);
      size += jsonTextBound(area.designation) + jsonTextBound(area.iucnCategory);
    }
  }
  return size;
}

/**
 * A page as Source messages, cut where the next source would take the answer past
 * MAX_PAGE_BYTES in `codec` (never before the first: one source is at most ~1.6 MB in binary,
 * ~2.5 MB in JSON): the token then resumes after the last source sent, so no record is skipped.
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
