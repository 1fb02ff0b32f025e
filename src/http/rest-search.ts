import { create } from "@bufbuild/protobuf";
import type { Timestamp } from "@bufbuild/protobuf/wkt";
import {
  type BoundingBox,
  PointSchema,
  type SearchSourcesRequest,
  SearchSourcesRequestSchema,
  type TimeRange,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { preview } from "../ledger/preview.js";
import type { Violation } from "../ledger/violation.js";
import type { Environment } from "../model/list-query.js";
import type { Vocabulary } from "../model/vocabulary.js";
import { pointerToken } from "./json-pointer.js";
import { altitudeProblem, decodeGeometry, isObject, type Json } from "./rest-decode.js";
import {
  BOX_FORMAT,
  boxOf,
  INSTANT_FORMAT,
  instantOf,
  type ListFieldReader,
  listParametersOf,
  RANGE_FORMAT,
  rangeOf,
  readListRequest,
} from "./rest-query.js";

/** The members of a search body besides the listing's: the area. */
const AREA_MEMBER = "intersects";

/**
 * The listing's fields as members of a search body (docs/api.md §13): the same names as the list
 * query, in their JSON types. Every problem points at its member.
 */
class BodyReader implements ListFieldReader {
  constructor(
    private readonly body: Json,
    private readonly violations: Violation[],
  ) {}

  private fail(name: string, detail: string): void {
    this.violations.push({ field: name, pointer: `/${name}`, detail });
  }

  /** The member's value; null counts as absent, like an optional field of a create. */
  private at(name: string): unknown {
    const value = this.body[name];
    return value === null ? undefined : value;
  }

  text(name: string): string | undefined {
    const value = this.at(name);
    if (value === undefined || typeof value === "string") return value;
    this.fail(name, `${name} must be a string, got ${preview(value)}`);
    return undefined;
  }

  integer(name: string): number | undefined {
    const value = this.at(name);
    if (value === undefined) return undefined;
    if (typeof value === "number" && Number.isInteger(value) && Math.abs(value) <= 2 ** 31 - 1) return value;
    this.fail(name, `${name} must be an integer, got ${preview(value)}`);
    return undefined;
  }

  enumValue(name: string, vocabulary: Vocabulary): number {
    const value = this.at(name);
    if (value === undefined) return 0;
    const known = typeof value === "string" ? vocabulary.valueOf(value) : undefined;
    if (known === undefined) this.fail(name, vocabulary.unknownName(name, preview(value)));
    return known ?? 0;
  }

  enumValues(name: string, vocabulary: Vocabulary): number[] {
    const value = this.at(name);
    if (value === undefined) return [];
    // One name or an array of names: a record matches when it has ANY of them.
    const names: unknown[] = Array.isArray(value) ? value : [value];
    const values: number[] = [];
    names.forEach((item, index) => {
      const known = typeof item === "string" ? vocabulary.valueOf(item) : undefined;
      if (known !== undefined) values.push(known);
      else {
        const pointer = Array.isArray(value) ? `/${name}/${index}` : `/${name}`;
        this.violations.push({ field: name, pointer, detail: vocabulary.unknownName(name, preview(item)) });
      }
    });
    return values;
  }

  bool(name: string): boolean | undefined {
    const value = this.at(name);
    if (value === undefined || typeof value === "boolean") return value;
    this.fail(name, `${name} must be true or false, got ${preview(value)}`);
    return undefined;
  }

  instant(name: string): Timestamp | undefined {
    const value = this.at(name);
    if (value === undefined) return undefined;
    const instant = typeof value === "string" ? instantOf(value) : undefined;
    if (instant === undefined) this.fail(name, `${name} must be ${INSTANT_FORMAT}, got ${preview(value)}`);
    return instant;
  }

  range(name: string): TimeRange | undefined {
    const value = this.at(name);
    if (value === undefined) return undefined;
    const range = typeof value === "string" ? rangeOf(value) : undefined;
    if (range === undefined) this.fail(name, `${name} must be ${RANGE_FORMAT}, got ${preview(value)}`);
    return range;
  }

  box(name: string): BoundingBox | undefined {
    const value = this.at(name);
    if (value === undefined) return undefined;
    const box = Array.isArray(value) ? boxOf(value) : undefined;
    if (box === undefined) this.fail(name, `${name} must be an array of ${BOX_FORMAT}, got ${preview(value)}`);
    return box;
  }
}

/** GeoJSON Point → the request's point, or undefined after reporting why not. */
function decodePoint(value: Json, violations: Violation[]) {
  const position = value.coordinates;
  if (
    Array.isArray(position) &&
    (position.length === 2 || position.length === 3) &&
    position.every((n) => typeof n === "number")
  ) {
    const altitude = altitudeProblem(position);
    if (altitude === undefined) return { lon: position[0] as number, lat: position[1] as number };
    violations.push({ field: AREA_MEMBER, pointer: `/${AREA_MEMBER}/coordinates/2`, detail: altitude });
    return undefined;
  }
  violations.push({
    field: AREA_MEMBER,
    pointer: `/${AREA_MEMBER}/coordinates`,
    detail: `a Point's coordinates must be 2 or 3 numbers (longitude, latitude[, altitude]), got ${preview(position)}`,
  });
  return undefined;
}

/** The area member → the request's oneof; reports what is wrong with it. */
function decodeArea(value: unknown, request: SearchSourcesRequest, violations: Violation[]): void {
  const pointer = `/${AREA_MEMBER}`;
  if (value === undefined || value === null) {
    violations.push({
      field: AREA_MEMBER,
      pointer,
      detail: "intersects is required: a GeoJSON Point, Polygon or MultiPolygon geometry",
    });
    return;
  }
  if (isObject(value) && value.type === "Point") {
    const point = decodePoint(value, violations);
    if (point) request.intersects = { case: "point", value: create(PointSchema, point) };
    return;
  }
  if (!isObject(value)) {
    violations.push({
      field: AREA_MEMBER,
      pointer,
      detail: `intersects must be a GeoJSON geometry object (Point, Polygon or MultiPolygon), got ${preview(value)}`,
    });
    return;
  }
  if (value.type !== "Polygon" && value.type !== "MultiPolygon") {
    violations.push({
      field: AREA_MEMBER,
      pointer: `${pointer}/type`,
      detail: `intersects must be a GeoJSON Point, Polygon or MultiPolygon, got type ${preview(value.type ?? null)}`,
    });
    return;
  }
  const geometry = decodeGeometry(value, pointer, (at, detail) =>
    violations.push({ field: AREA_MEMBER, pointer: at, detail }),
  );
  if (geometry) request.intersects = { case: "geometry", value: geometry };
}

export interface DecodedSearch {
  request: SearchSourcesRequest;
  violations: Violation[];
}

/**
 * A search body (docs/api.md §13) → the SearchSourcesRequest it names: the area, and the listing's
 * fields as members. An unknown member is refused (a misspelt filter would silently widen the
 * answer), as an unknown query parameter is.
 */
export function decodeSearchBody(body: unknown, environment: Environment): DecodedSearch {
  const request = create(SearchSourcesRequestSchema);
  const violations: Violation[] = [];
  if (!isObject(body)) {
    violations.push({
      field: AREA_MEMBER,
      pointer: "",
      detail: `the body must be a JSON object, got ${preview(body)}`,
    });
    return { request, violations };
  }
  const allowed = [AREA_MEMBER, ...listParametersOf(environment)];
  for (const name of Object.keys(body)) {
    if (!allowed.includes(name)) {
      violations.push({
        field: name,
        pointer: `/${pointerToken(name)}`,
        detail: `unknown member ${preview(name)}; allowed here: ${allowed.join(", ")}`,
      });
    }
  }
  decodeArea(body[AREA_MEMBER], request, violations);
  request.query = readListRequest(new BodyReader(body, violations), environment);
  return { request, violations };
}
