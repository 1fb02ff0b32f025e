import { type SourceRecord, type UnepOverlapRecord, unepOverlapJson } from "../model/records.js";
import { formatRfc3339 } from "./rfc3339.js";

const text = (value: string | null): string => (value === null ? "null" : JSON.stringify(value));

function overlapJson(overlap: UnepOverlapRecord | null): string {
  return overlap === null ? "null" : JSON.stringify(unepOverlapJson(overlap));
}

/** The record's members before its geometry, in docs/api.md §4's order (id aside). */
function membersBeforeGeometry(record: SourceRecord): string {
  return (
    `"alt_id":${JSON.stringify(record.altId)}` +
    `,"methodology":${text(record.methodology)},"tags":${JSON.stringify(record.tags)}` +
    `,"steward_id":${text(record.stewardId)},"project_id":${text(record.projectId)}` +
    `,"outcome_reporting_year":${record.outcomeReportingYear === null ? "null" : record.outcomeReportingYear}` +
    `,"source_type":${text(record.sourceType)},"attribute_type":${JSON.stringify(record.attributeType)}` +
    `,"geometry_source":${text(record.geometrySource)}`
  );
}

/** The record's members after its geometry, in docs/api.md §4's order. */
function membersAfterGeometry(record: SourceRecord): string {
  return (
    `"start_at":"${formatRfc3339(record.startAt)}","end_at":"${formatRfc3339(record.endAt)}"` +
    `,"account_id":${JSON.stringify(record.accountId)}` +
    `,"created_by":${JSON.stringify(record.createdBy)},"updated_by":${JSON.stringify(record.updatedBy)}` +
    `,"created_at":"${formatRfc3339(record.createdAt)}","updated_at":"${formatRfc3339(record.updatedAt)}"` +
    `,"conflict":${record.conflict},"unep_overlap":${overlapJson(record.unepOverlap)}`
  );
}

/** The stored GeoJSON text as it is, or the geometry written out. */
const geometryText = (record: SourceRecord): string => record.geometryJson ?? JSON.stringify(record.geometry);

/**
 * One record as docs/api.md §4's JSON text: every key always present, absent values null, lists []
 * when empty. Written out by hand because it is the hot path of every REST answer: the stored
 * GeoJSON text is spliced in as it is, and nothing is parsed or built twice.
 */
export function renderRecordJson(record: SourceRecord): string {
  return (
    `{"id":${JSON.stringify(record.id)},${membersBeforeGeometry(record)}` +
    `,"geometry":${geometryText(record)},${membersAfterGeometry(record)}}`
  );
}

/**
 * One record as a GeoJSON Feature (docs/api.md §16): `id` the record's id, `geometry` its geometry,
 * `properties` every other member of the record's JSON, with the same values.
 */
export function renderFeatureJson(record: SourceRecord, links?: readonly Link[]): string {
  return (
    `{"type":"Feature","id":${JSON.stringify(record.id)},"geometry":${geometryText(record)}` +
    `,"properties":{${membersBeforeGeometry(record)},${membersAfterGeometry(record)}}` +
    `${links === undefined ? "" : `,"links":${JSON.stringify(links)}`}}`
  );
}

/**
 * One Feature as UTF-8 bytes: a Buffer, so the answer's type stays `application/geo+json` as RFC
 * 7946 §12 registers it (Fastify adds `; charset=utf-8` to the type of a string body).
 */
export function renderFeatureBytes(record: SourceRecord, links?: readonly Link[]): Buffer {
  return Buffer.from(renderFeatureJson(record, links), "utf8");
}

/**
 * `head`, the parts joined by commas, and `tail`, as UTF-8 bytes. Written part by part into one
 * Buffer rather than joined into one string: a page of 100 records is ~300 KB, and a string that
 * size lands in V8's large-object space (and is copied again when Node prepends the headers),
 * where it stays until a full GC; under load those pages drove the list server's peak RSS. The
 * Buffer lives outside the heap and is released with its small handle.
 */
function joinedBytes(head: string, parts: readonly string[], tail: string): Buffer {
  let size = Buffer.byteLength(head, "utf8") + Buffer.byteLength(tail, "utf8") + Math.max(0, parts.length - 1);
  for (const part of parts) size += Buffer.byteLength(part, "utf8");
  const body = Buffer.allocUnsafe(size);
  let at = body.write(head, 0, "utf8");
  parts.forEach((part, i) => {
    if (i > 0) at += body.write(",", at, "latin1");
    at += body.write(part, at, "utf8");
  });
  at += body.write(tail, at, "utf8");
  // allocUnsafe leaves old memory in place: every byte must have been written.
  if (at !== size) throw new Error(`rendered ${at} of ${size} bytes`);
  return body;
}

/** A JSON array of records, as UTF-8 bytes. */
export function renderRecordsJson(records: readonly SourceRecord[]): Buffer {
  return joinedBytes("[", records.map(renderRecordJson), "]");
}

/** A link of a GeoJSON or OGC API answer. */
export interface Link {
  href: string;
  rel: string;
  type?: string;
  title?: string;
}

/**
 * A page of records as a GeoJSON FeatureCollection (docs/api.md §16), as UTF-8 bytes: `features`,
 * then `numberReturned` and `links` (with `next` when more follow), and `members` (e.g. OGC's
 * `timeStamp`) when given.
 */
export function renderFeatureCollection(
  records: readonly SourceRecord[],
  links: readonly Link[],
  members: Record<string, unknown> = {},
): Buffer {
  const trailer = JSON.stringify({ ...members, numberReturned: records.length, links });
  return joinedBytes(
    '{"type":"FeatureCollection","features":[',
    records.map((record) => renderFeatureJson(record)),
    `],${trailer.slice(1)}`,
  );
}
