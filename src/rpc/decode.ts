import type { Timestamp } from "@bufbuild/protobuf/wkt";
import type {
  BoundingBox as BoxMessage,
  DeleteSourceRequest,
  ListSourcesRequest,
  SearchSourcesRequest,
  SourceInput,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { BoundingBox, SearchArea } from "../geo/types.js";
import type { SourceDraft } from "../ledger/commands.js";
import type { Violation } from "../ledger/violation.js";
import { LIST_FILTERS, type ListFilterValues, type TimeRange } from "../model/list-query.js";
import { attributeTypes, geometrySources, sourceTypes, type Vocabulary } from "../model/vocabulary.js";
import { geometryFromProto } from "./geometry-codec.js";

/**
 * Request messages → the ledger's commands. What only the wire form can get wrong is reported
 * here (an enum number no name has, a Timestamp outside its range, a ring with an odd number of
 * packed coordinates); every rule of docs/api.md §5 is the ledger's.
 */

// google.protobuf.Timestamp's range: 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999999Z.
const MIN_SECONDS = -62135596800n;
const MAX_SECONDS = 253402300799n;

function timestampMs(
  ts: Timestamp | undefined,
  field: string,
  source: number | undefined,
  issues: Violation[],
): number | null {
  if (!ts) return null;
  if (ts.seconds < MIN_SECONDS || ts.seconds > MAX_SECONDS || ts.nanos < 0 || ts.nanos > 999_999_999) {
    issues.push({ source, field, detail: `${field} is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59Z` });
    return null;
  }
  // Times are kept to the millisecond (docs/api.md §4 renders them with milliseconds).
  return Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1_000_000);
}

/** The name of an enum number; 0 (unspecified) is absent, an unknown number a violation. */
function enumName(value: number, vocabulary: Vocabulary, field: string, issues: Violation[], at: Partial<Violation>) {
  if (value === 0) return null;
  const name = vocabulary.nameOf(value);
  if (name === undefined) issues.push({ ...at, field, detail: vocabulary.unknownNumber(field, value) });
  return name ?? null;
}

/**
 * The names of a repeated enum. A list with an unknown number is dropped whole, so that the
 * indexes the ledger reports (a repeated name) keep matching the request's.
 */
function enumNames(
  values: readonly number[],
  vocabulary: Vocabulary,
  field: string,
  issues: Violation[],
  source?: number,
) {
  const names: string[] = [];
  let unknown = false;
  values.forEach((value, index) => {
    const name = vocabulary.nameOf(value);
    if (name !== undefined) names.push(name);
    else {
      unknown = true;
      issues.push({ source, field, index, detail: vocabulary.unknownNumber(field, value) });
    }
  });
  return unknown ? [] : names;
}

/** One SourceInput → a draft; its wire-level problems go to `issues`. */
export function draftOf(input: SourceInput, source: number, issues: Violation[]): SourceDraft {
  const { geometry, issues: packing } = geometryFromProto(input.geometry);
  const geometryKind = geometry?.type === "MultiPolygon" ? "multi_polygon" : "polygon";
  for (const issue of packing) {
    issues.push({ source, field: "geometry", geometryKind, coordinates: issue.path, detail: issue.detail });
  }
  return {
    altId: input.altId,
    methodology: input.methodology ?? null,
    tags: input.tags,
    stewardId: input.stewardId ?? null,
    projectId: input.projectId ?? null,
    outcomeReportingYear: input.outcomeReportingYear ?? null,
    sourceType: enumName(input.sourceType, sourceTypes, "source_type", issues, { source }),
    attributeType: enumNames(input.attributeType, attributeTypes, "attribute_type", issues, source),
    geometrySource: enumName(input.geometrySource, geometrySources, "geometry_source", issues, { source }),
    geometry: packing.length > 0 ? null : geometry,
    startAt: timestampMs(input.startAt, "start_at", source, issues),
    endAt: timestampMs(input.endAt, "end_at", source, issues),
  };
}

/** The list filters a ListSourcesRequest sets, in domain form, read by LIST_FILTERS. */
export function listFiltersOf(req: ListSourcesRequest, issues: Violation[]): ListFilterValues {
  const values: Record<string, unknown> = {};
  const message = req as unknown as Record<string, unknown>;
  for (const filter of LIST_FILTERS) {
    const raw = message[filter.messageKey];
    const vocabulary = filter.vocabulary as Vocabulary;
    switch (filter.kind) {
      case "text":
      case "year":
        if (raw !== undefined) values[filter.queryKey] = raw;
        break;
      case "enum": {
        const name = enumName(raw as number, vocabulary, filter.name, issues, {});
        if (name !== null) values[filter.queryKey] = name;
        break;
      }
      case "anyOf": {
        const names = enumNames(raw as number[], vocabulary, filter.name, issues);
        if (names.length > 0) values[filter.queryKey] = names;
        break;
      }
      case "bool":
        if (raw !== undefined) values[filter.queryKey] = raw;
        break;
      case "instant": {
        const ms = timestampMs(raw as Timestamp | undefined, filter.name, undefined, issues);
        if (ms !== null) values[filter.queryKey] = ms;
        break;
      }
      case "range": {
        if (raw === undefined) break;
        const { start, end } = raw as { start?: Timestamp; end?: Timestamp };
        const range: TimeRange = {};
        const startMs = timestampMs(start, `${filter.name}.start`, undefined, issues);
        const endMs = timestampMs(end, `${filter.name}.end`, undefined, issues);
        if (startMs !== null) range.start = startMs;
        if (endMs !== null) range.end = endMs;
        values[filter.queryKey] = range;
        break;
      }
      case "box":
        if (raw !== undefined) values[filter.queryKey] = boxOf(raw as BoxMessage);
        break;
    }
  }
  return values as ListFilterValues;
}

function boxOf(box: BoxMessage): BoundingBox {
  return { minX: box.minLon, minY: box.minLat, maxX: box.maxLon, maxY: box.maxLat };
}

/**
 * The area a SearchSourcesRequest names, null when it names none. A geometry's wire-level problems
 * (an odd number of packed coordinates) go to `issues`, on the field `intersects` like the
 * ledger's own.
 */
export function searchAreaOf(req: SearchSourcesRequest, issues: Violation[]): SearchArea | null {
  const { intersects } = req;
  switch (intersects.case) {
    case "point":
      return { type: "Point", coordinates: [intersects.value.lon, intersects.value.lat] };
    case "box":
      return { type: "Box", box: boxOf(intersects.value) };
    case "geometry": {
      const { geometry, issues: packing } = geometryFromProto(intersects.value);
      const geometryKind = geometry?.type === "MultiPolygon" ? "multi_polygon" : "polygon";
      for (const issue of packing) {
        issues.push({ field: "intersects", geometryKind, coordinates: issue.path, detail: issue.detail });
      }
      if (geometry === null && packing.length === 0) {
        issues.push({ field: "intersects", detail: "geometry must be a Polygon or a MultiPolygon" });
      }
      return packing.length > 0 ? null : geometry;
    }
    default:
      return null;
  }
}

/** The key a DeleteSourceRequest names; null when it names neither an id nor an alt_id. */
export function deleteKeyOf(req: DeleteSourceRequest): { by: "id" | "alt_id"; value: string } | null {
  switch (req.key.case) {
    case "id":
      return { by: "id", value: req.key.value };
    case "altId":
      return { by: "alt_id", value: req.key.value };
    default:
      return null;
  }
}

/** An `as_of` Timestamp → epoch milliseconds; out of Timestamp's range is a violation. */
export function asOfOf(asOf: Timestamp | undefined, issues: Violation[]): number | undefined {
  return timestampMs(asOf, "as_of", undefined, issues) ?? undefined;
}
