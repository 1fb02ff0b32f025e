import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type { SourceInput } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { geometryFromProto } from "../geo/proto-codec.js";
import type { SourceGeometry } from "../geo/types.js";
import { checkGeometry } from "../geo/validity.js";
import type { NewSourceRecord } from "../store/port.js";
import type { Violation } from "./violation.js";
import { attributeTypes, geometrySources, sourceTypes, type Vocabulary } from "./vocabulary.js";

/** Contract §4: at most this many sources in one create request. */
export const MAX_SOURCES_PER_REQUEST = 1000;
const MAX_TEXT = 256;
const MAX_TAGS = 64;
const MAX_TAG = 128;
// google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
const MIN_SECONDS = -62135596800n;
const MAX_SECONDS = 253402300799n;
// C0 and C1 control characters, DEL included.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/u;

/** A source that passed every rule of contract §5, in domain form. */
export type ValidSource = Pick<
  NewSourceRecord,
  | "altId"
  | "methodology"
  | "tags"
  | "stewardId"
  | "projectId"
  | "outcomeReportingYear"
  | "sourceType"
  | "attributeType"
  | "geometrySource"
  | "geometry"
  | "startAt"
  | "endAt"
>;

function length(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** 1–256 characters; used for alt_id, methodology, steward_id, project_id and account_id. */
export function checkIdentifierText(value: string, name: string): string | null {
  const n = length(value);
  if (n === 0) return `${name} must not be empty`;
  if (n > MAX_TEXT) return `${name} must be at most ${MAX_TEXT} characters, got ${n}`;
  return null;
}

function checkAltId(altId: string): string | null {
  if (altId === "") return "alt_id is required";
  const tooLong = checkIdentifierText(altId, "alt_id");
  if (tooLong) return tooLong;
  if (CONTROL.test(altId)) return "alt_id must not contain control characters";
  if (altId.trim() !== altId) return "alt_id must not start or end with white space";
  return null;
}

function timestampMs(ts: Timestamp | undefined, name: string, issues: Violation[], source: number): number | null {
  if (!ts) {
    issues.push({ source, field: name, detail: `${name} is required` });
    return null;
  }
  if (ts.seconds < MIN_SECONDS || ts.seconds > MAX_SECONDS || ts.nanos < 0 || ts.nanos > 999_999_999) {
    issues.push({ source, field: name, detail: `${name} is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z` });
    return null;
  }
  // Times are kept to the millisecond (contract §4 renders them with milliseconds).
  return Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1_000_000);
}

function optionalName(
  value: number,
  vocabulary: Vocabulary,
  field: string,
  source: number,
  issues: Violation[],
): string | null {
  if (value === 0) return null;
  const name = vocabulary.nameOf(value);
  if (name === undefined) {
    issues.push({ source, field, detail: `${field} ${value} is not one of ${vocabulary.names.join(", ")}` });
    return null;
  }
  return name;
}

function optionalText(value: string | undefined, field: string, source: number, issues: Violation[]): string | null {
  if (value === undefined) return null;
  const problem = checkIdentifierText(value, field);
  if (problem) issues.push({ source, field, detail: problem });
  return value;
}

function checkTags(tags: string[], source: number, issues: Violation[]): void {
  if (tags.length > MAX_TAGS) {
    issues.push({ source, field: "tags", detail: `at most ${MAX_TAGS} tags are allowed, got ${tags.length}` });
  }
  tags.forEach((tag, index) => {
    const n = length(tag);
    if (n === 0 || n > MAX_TAG) {
      issues.push({ source, field: "tags", index, detail: `a tag must be 1 to ${MAX_TAG} characters, got ${n}` });
    }
  });
}

function checkAttributeTypes(values: number[], source: number, issues: Violation[]): string[] {
  const names: string[] = [];
  values.forEach((value, index) => {
    const name = attributeTypes.nameOf(value);
    if (name === undefined) {
      issues.push({
        source,
        field: "attribute_type",
        index,
        detail: `attribute_type ${value} is not one of ${attributeTypes.names.join(", ")}`,
      });
    } else if (names.includes(name)) {
      issues.push({ source, field: "attribute_type", index, detail: `attribute_type ${name} is repeated` });
    } else {
      names.push(name);
    }
  });
  return names;
}

function checkGeometryField(input: SourceInput, source: number, issues: Violation[]): SourceGeometry | null {
  const { geometry, issues: packing } = geometryFromProto(input.geometry);
  if (!geometry) {
    issues.push({ source, field: "geometry", detail: "geometry is required: a Polygon or a MultiPolygon" });
    return null;
  }
  const geometryKind = geometry.type === "Polygon" ? "polygon" : "multi_polygon";
  const found = packing.length > 0 ? packing : checkGeometry(geometry);
  for (const issue of found) {
    issues.push({ source, field: "geometry", geometryKind, coordinates: issue.path, detail: issue.detail });
  }
  return found.length === 0 ? geometry : null;
}

/** Every contract §5 violation of one source; `valid` is set only when there is none. */
export function validateSourceInput(
  input: SourceInput,
  source: number,
): { valid: ValidSource | null; violations: Violation[] } {
  const issues: Violation[] = [];
  const altIdProblem = checkAltId(input.altId);
  if (altIdProblem) issues.push({ source, field: "alt_id", detail: altIdProblem });
  const methodology = optionalText(input.methodology, "methodology", source, issues);
  const stewardId = optionalText(input.stewardId, "steward_id", source, issues);
  const projectId = optionalText(input.projectId, "project_id", source, issues);
  checkTags(input.tags, source, issues);
  const year = input.outcomeReportingYear ?? null;
  if (year !== null && (year < 1000 || year > 9999)) {
    issues.push({
      source,
      field: "outcome_reporting_year",
      detail: `outcome_reporting_year must be a year from 1000 to 9999, got ${year}`,
    });
  }
  const sourceType = optionalName(input.sourceType, sourceTypes, "source_type", source, issues);
  const attributeType = checkAttributeTypes(input.attributeType, source, issues);
  const geometrySource = optionalName(input.geometrySource, geometrySources, "geometry_source", source, issues);
  const geometry = checkGeometryField(input, source, issues);
  const startAt = timestampMs(input.startAt, "start_at", issues, source);
  const endAt = timestampMs(input.endAt, "end_at", issues, source);
  if (startAt !== null && endAt !== null && endAt <= startAt) {
    issues.push({
      source,
      field: "end_at",
      detail: "end_at must be after start_at (times are kept to the millisecond)",
    });
  }
  if (issues.length > 0 || geometry === null || startAt === null || endAt === null) {
    return { valid: null, violations: issues };
  }
  return {
    valid: {
      altId: input.altId,
      methodology,
      tags: [...input.tags],
      stewardId,
      projectId,
      outcomeReportingYear: year,
      sourceType,
      attributeType,
      geometrySource,
      geometry,
      startAt,
      endAt,
    },
    violations: [],
  };
}

/** Contract §5 for a whole create request: count bounds, each source, alt_id repeats within it. */
export function validateSourceInputs(inputs: SourceInput[]): { valid: ValidSource[]; violations: Violation[] } {
  const violations: Violation[] = [];
  if (inputs.length === 0) violations.push({ field: "sources", detail: "at least one source is required" });
  if (inputs.length > MAX_SOURCES_PER_REQUEST) {
    violations.push({
      field: "sources",
      detail: `at most ${MAX_SOURCES_PER_REQUEST} sources are allowed in one request, got ${inputs.length}`,
    });
    return { valid: [], violations };
  }
  const valid: ValidSource[] = [];
  const firstIndexOfAltId = new Map<string, number>();
  inputs.forEach((input, i) => {
    const result = validateSourceInput(input, i);
    violations.push(...result.violations);
    if (result.valid) valid.push(result.valid);
    const first = firstIndexOfAltId.get(input.altId);
    if (first === undefined) firstIndexOfAltId.set(input.altId, i);
    else if (input.altId !== "") {
      violations.push({
        source: i,
        field: "alt_id",
        detail: `alt_id "${input.altId}" repeats source ${first} of this request`,
      });
    }
  });
  return { valid: violations.length === 0 ? valid : [], violations };
}
