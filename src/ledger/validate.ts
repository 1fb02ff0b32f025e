import { checkGeometry } from "../geo/validity.js";
import type { NewSourceRecord } from "../model/records.js";
import { attributeTypes, geometrySources, sourceTypes, type Vocabulary } from "../model/vocabulary.js";
import type { SourceDraft } from "./commands.js";
import { preview } from "./preview.js";
import {
  altIdProblem,
  MAX_SOURCES_PER_REQUEST,
  repeatedAttributeType,
  tagCountProblem,
  tagProblem,
  textProblem,
  yearProblem,
} from "./rules.js";
import type { Violation } from "./violation.js";

/** A source that passed every rule of docs/api.md §5, in domain form. */
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

function optionalText(value: string | null, field: string, source: number, issues: Violation[]): void {
  const problem = value === null ? null : textProblem(value, field);
  if (problem) issues.push({ source, field, detail: problem });
}

function optionalName(
  value: string | null,
  vocabulary: Vocabulary,
  field: string,
  source: number,
  issues: Violation[],
) {
  if (value !== null && vocabulary.valueOf(value) === undefined) {
    issues.push({ source, field, detail: vocabulary.unknownName(field, preview(value), true) });
  }
}

function checkTags(tags: readonly string[], source: number, issues: Violation[]): void {
  const tooMany = tagCountProblem(tags.length);
  if (tooMany) issues.push({ source, field: "tags", detail: tooMany });
  tags.forEach((tag, index) => {
    const problem = tagProblem(tag);
    if (problem) issues.push({ source, field: "tags", index, detail: problem });
  });
}

function checkAttributeTypes(names: readonly string[], source: number, issues: Violation[]): void {
  const seen = new Set<string>();
  names.forEach((name, index) => {
    if (attributeTypes.valueOf(name) === undefined) {
      const detail = attributeTypes.unknownName("attribute_type", preview(name), true);
      issues.push({ source, field: "attribute_type", index, detail });
    } else if (seen.has(name)) {
      issues.push({ source, field: "attribute_type", index, detail: repeatedAttributeType(name) });
    }
    seen.add(name);
  });
}

function checkGeometryField(draft: SourceDraft, source: number, issues: Violation[]): boolean {
  const { geometry } = draft;
  if (geometry === null) {
    issues.push({ source, field: "geometry", detail: "geometry is required: a Polygon or a MultiPolygon" });
    return false;
  }
  const geometryKind = geometry.type === "Polygon" ? "polygon" : "multi_polygon";
  const found = checkGeometry(geometry);
  for (const issue of found) {
    issues.push({ source, field: "geometry", geometryKind, coordinates: issue.path, detail: issue.detail });
  }
  return found.length === 0;
}

/** Every docs/api.md §5 violation of one source; `valid` is set only when there is none. */
export function validateSourceDraft(
  draft: SourceDraft,
  source: number,
): { valid: ValidSource | null; violations: Violation[] } {
  const issues: Violation[] = [];
  const altId = altIdProblem(draft.altId);
  if (altId) issues.push({ source, field: "alt_id", detail: altId });
  optionalText(draft.methodology, "methodology", source, issues);
  optionalText(draft.stewardId, "steward_id", source, issues);
  optionalText(draft.projectId, "project_id", source, issues);
  checkTags(draft.tags, source, issues);
  const year = draft.outcomeReportingYear;
  const yearIssue = year === null ? null : yearProblem(year, "outcome_reporting_year");
  if (yearIssue) issues.push({ source, field: "outcome_reporting_year", detail: yearIssue });
  optionalName(draft.sourceType, sourceTypes, "source_type", source, issues);
  checkAttributeTypes(draft.attributeType, source, issues);
  optionalName(draft.geometrySource, geometrySources, "geometry_source", source, issues);
  const geometryValid = checkGeometryField(draft, source, issues);
  const { startAt, endAt } = draft;
  if (startAt === null) issues.push({ source, field: "start_at", detail: "start_at is required" });
  if (endAt === null) issues.push({ source, field: "end_at", detail: "end_at is required" });
  if (startAt !== null && endAt !== null && endAt <= startAt) {
    issues.push({
      source,
      field: "end_at",
      detail: "end_at must be after start_at (times are kept to the millisecond)",
    });
  }
  if (issues.length > 0 || !geometryValid || draft.geometry === null || startAt === null || endAt === null) {
    return { valid: null, violations: issues };
  }
  return {
    valid: {
      altId: draft.altId,
      methodology: draft.methodology,
      tags: [...draft.tags],
      stewardId: draft.stewardId,
      projectId: draft.projectId,
      outcomeReportingYear: year,
      sourceType: draft.sourceType,
      attributeType: [...draft.attributeType],
      geometrySource: draft.geometrySource,
      geometry: draft.geometry,
      startAt,
      endAt,
    },
    violations: [],
  };
}

/** docs/api.md §5 for a whole create request: count bounds, each source, alt_id repeats within it. */
export function validateSourceDrafts(drafts: readonly SourceDraft[]): {
  valid: ValidSource[];
  violations: Violation[];
} {
  const violations: Violation[] = [];
  if (drafts.length === 0) violations.push({ field: "sources", detail: "at least one source is required" });
  if (drafts.length > MAX_SOURCES_PER_REQUEST) {
    violations.push({
      field: "sources",
      detail: `at most ${MAX_SOURCES_PER_REQUEST} sources are allowed in one request, got ${drafts.length}`,
    });
    return { valid: [], violations };
  }
  const valid: ValidSource[] = [];
  const firstIndexOfAltId = new Map<string, number>();
  drafts.forEach((draft, i) => {
    const result = validateSourceDraft(draft, i);
    violations.push(...result.violations);
    if (result.valid) valid.push(result.valid);
    const first = firstIndexOfAltId.get(draft.altId);
    if (first === undefined) firstIndexOfAltId.set(draft.altId, i);
    else if (draft.altId !== "") {
      violations.push({
        source: i,
        field: "alt_id",
        detail: `alt_id ${preview(draft.altId)} repeats source ${first} of this request`,
      });
    }
  });
  return { valid: violations.length === 0 ? valid : [], violations };
}
