import { type SourceRecord, type UnepOverlapRecord, unepOverlapJson } from "../model/records.js";
import { formatRfc3339 } from "./rfc3339.js";

const text = (value: string | null): string => (value === null ? "null" : JSON.stringify(value));

function overlapJson(overlap: UnepOverlapRecord | null): string {
  return overlap === null ? "null" : JSON.stringify(unepOverlapJson(overlap));
}

/**
 * One record as docs/api.md §4's JSON text: every key always present, absent values null, lists []
 * when empty. Written out by hand because it is the hot path of every REST answer: the stored
 * GeoJSON text is spliced in as it is, and nothing is parsed or built twice.
 */
export function renderRecordJson(record: SourceRecord): string {
  return (
    `{"id":${JSON.stringify(record.id)},"alt_id":${JSON.stringify(record.altId)}` +
    `,"methodology":${text(record.methodology)},"tags":${JSON.stringify(record.tags)}` +
    `,"steward_id":${text(record.stewardId)},"project_id":${text(record.projectId)}` +
    `,"outcome_reporting_year":${record.outcomeReportingYear === null ? "null" : record.outcomeReportingYear}` +
    `,"source_type":${text(record.sourceType)},"attribute_type":${JSON.stringify(record.attributeType)}` +
    `,"geometry_source":${text(record.geometrySource)}` +
    `,"geometry":${record.geometryJson ?? JSON.stringify(record.geometry)}` +
    `,"start_at":"${formatRfc3339(record.startAt)}","end_at":"${formatRfc3339(record.endAt)}"` +
    `,"account_id":${JSON.stringify(record.accountId)}` +
    `,"created_by":${JSON.stringify(record.createdBy)},"updated_by":${JSON.stringify(record.updatedBy)}` +
    `,"created_at":"${formatRfc3339(record.createdAt)}","updated_at":"${formatRfc3339(record.updatedAt)}"` +
    `,"conflict":${record.conflict},"unep_overlap":${overlapJson(record.unepOverlap)}}`
  );
}

/**
 * A JSON array of records, as UTF-8 bytes. Written record by record into one Buffer rather than
 * joined into one string: a page of 100 records is ~300 KB, and a string that size lands in V8's
 * large-object space (and is copied again when Node prepends the headers), where it stays until
 * a full GC; under load those pages drove the list server's peak RSS. The Buffer lives outside the
 * heap and is released with its small handle.
 */
export function renderRecordsJson(records: readonly SourceRecord[]): Buffer {
  const parts = records.map(renderRecordJson);
  let size = 2 + Math.max(0, parts.length - 1);
  for (const part of parts) size += Buffer.byteLength(part, "utf8");
  const body = Buffer.allocUnsafe(size);
  let at = body.write("[", 0, "latin1");
  parts.forEach((part, i) => {
    if (i > 0) at += body.write(",", at, "latin1");
    at += body.write(part, at, "utf8");
  });
  at += body.write("]", at, "latin1");
  // allocUnsafe leaves old memory in place: every byte must have been written.
  if (at !== size) throw new Error(`rendered ${at} of ${size} bytes`);
  return body;
}
