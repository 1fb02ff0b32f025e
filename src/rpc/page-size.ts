import type { Source } from "../../gen/sourceledger/v2/source_ledger_pb.js";
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

/**
 * A page as Source messages, cut where the next source would take the answer past
 * MAX_PAGE_BYTES (never before the first: one source is at most ~1.6 MB): the token then resumes
 * after the last source sent, so no record is skipped.
 */
export function cappedPage(
  page: ListPage,
  toSource: (record: SourceRecord) => Source,
): { sources: Source[]; nextPageToken: string } {
  const sources: Source[] = [];
  let bytes = 0;
  for (const record of page.records) {
    const source = toSource(record);
    bytes += sourceSizeBound(source);
    if (sources.length > 0 && bytes > MAX_PAGE_BYTES) {
      return { sources, nextPageToken: page.tokenAfter(page.records[sources.length - 1]) };
    }
    sources.push(source);
  }
  return { sources, nextPageToken: page.nextPageToken ?? "" };
}
