import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  type CreateSourcesRequest,
  CreateSourcesRequestSchema,
  type Geometry,
  GeometrySchema,
  type SourceInput,
  SourceInputSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";
import { preview } from "../ledger/preview.js";
import { MAX_SOURCES_PER_REQUEST, repeatedAttributeType, tagCountProblem, tagProblem } from "../ledger/rules.js";
import { type Violation, WHOLE_SOURCE } from "../ledger/violation.js";
import { attributeTypes, geometrySources, sourceTypes, type Vocabulary } from "../model/vocabulary.js";
import { parseRfc3339 } from "./rfc3339.js";

/** Where, in the REST body, each field of each source came from (or belongs when missing). */
export interface CreateBodyMap {
  /** Pointer for request-level `sources` problems: `/features` or the root. */
  sourcesPointer: string;
  /** Per source: field name → JSON pointer. */
  fields: Map<string, string>[];
}

/** Which of docs/api.md §4.3's shapes a create body has; null when it has none of them. */
export type CreateBodyShape = "FeatureCollection" | "Feature" | "flat" | null;

export interface DecodedCreate {
  request: CreateSourcesRequest;
  map: CreateBodyMap;
  shape: CreateBodyShape;
  violations: Violation[];
}

export type Json = Record<string, unknown>;

const OPTIONAL_FIELDS = [
  "methodology",
  "tags",
  "steward_id",
  "project_id",
  "outcome_reporting_year",
  "source_type",
  "attribute_type",
  "geometry_source",
] as const;

export function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === undefined) return "nothing (the member is missing)";
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** Decodes one source's JSON values into a SourceInput, reporting JSON-level problems. */
class SourceDecoder {
  readonly input: SourceInput = create(SourceInputSchema);
  readonly pointers = new Map<string, string>();

  constructor(
    private readonly index: number,
    private readonly violations: Violation[],
  ) {}

  private fail(field: string, pointer: string, detail: string): void {
    this.violations.push({ source: this.index, field, pointer, detail });
  }

  /** Records where `field` lives; returns the value there, or undefined for absent/null. */
  private at(field: string, value: unknown, pointer: string): unknown {
    this.pointers.set(field, pointer);
    return value === null ? undefined : value;
  }

  text(field: "methodology" | "steward_id" | "project_id", raw: unknown, pointer: string): void {
    const value = this.at(field, raw, pointer);
    if (value === undefined) return;
    if (typeof value !== "string") {
      this.fail(field, pointer, `${field} must be a string, got ${describe(value)}`);
      return;
    }
    if (field === "methodology") this.input.methodology = value;
    else if (field === "steward_id") this.input.stewardId = value;
    else this.input.projectId = value;
  }

  altId(raw: unknown, pointer: string): void {
    const value = this.at("alt_id", raw, pointer);
    if (value === undefined) return;
    if (typeof value !== "string") {
      this.fail("alt_id", pointer, `alt_id must be a string, got ${describe(value)}`);
      return;
    }
    this.input.altId = value;
  }

  tags(raw: unknown, pointer: string): void {
    const value = this.at("tags", raw, pointer);
    if (value === undefined) return;
    if (!Array.isArray(value)) {
      this.fail("tags", pointer, `tags must be an array of strings, got ${describe(value)}`);
      return;
    }
    if (value.every((tag) => typeof tag === "string")) {
      this.input.tags = value;
      return;
    }
    // A list with a non-string is not handed on (its indexes must keep matching the body): every
    // problem of it is reported here, the strings' by the ledger's own rules, so none is missed.
    const tooMany = tagCountProblem(value.length);
    if (tooMany) this.fail("tags", pointer, tooMany);
    value.forEach((tag: unknown, i) => {
      const problem = typeof tag === "string" ? tagProblem(tag) : `a tag must be a string, got ${describe(tag)}`;
      if (problem) this.fail("tags", `${pointer}/${i}`, problem);
    });
  }

  year(raw: unknown, pointer: string): void {
    const value = this.at("outcome_reporting_year", raw, pointer);
    if (value === undefined) return;
    if (typeof value !== "number" || !Number.isInteger(value) || Math.abs(value) > 2 ** 31 - 1) {
      this.fail(
        "outcome_reporting_year",
        pointer,
        `outcome_reporting_year must be an integer year, got ${preview(value)}`,
      );
      return;
    }
    this.input.outcomeReportingYear = value;
  }

  private enumValue(field: string, vocabulary: Vocabulary, value: unknown, pointer: string): number | undefined {
    const known = typeof value === "string" ? vocabulary.valueOf(value) : undefined;
    if (known === undefined) {
      this.fail(field, pointer, vocabulary.unknownName(field, preview(value), true));
    }
    return known;
  }

  sourceType(raw: unknown, pointer: string): void {
    const value = this.at("source_type", raw, pointer);
    if (value !== undefined) this.input.sourceType = this.enumValue("source_type", sourceTypes, value, pointer) ?? 0;
  }

  geometrySource(raw: unknown, pointer: string): void {
    const value = this.at("geometry_source", raw, pointer);
    if (value !== undefined)
      this.input.geometrySource = this.enumValue("geometry_source", geometrySources, value, pointer) ?? 0;
  }

  attributeType(raw: unknown, pointer: string): void {
    const value = this.at("attribute_type", raw, pointer);
    if (value === undefined) return;
    if (!Array.isArray(value)) {
      this.fail("attribute_type", pointer, `attribute_type must be an array of strings, got ${describe(value)}`);
      return;
    }
    const numbers = value.map((item: unknown) => (typeof item === "string" ? attributeTypes.valueOf(item) : undefined));
    if (numbers.every((n) => n !== undefined)) {
      this.input.attributeType = numbers;
      return;
    }
    // Indexes must keep matching the body, so a partly unknown list is not handed on: its repeats
    // are reported here with its unknown names, in order, as the ledger would.
    const seen = new Set<number>();
    numbers.forEach((n, i) => {
      if (n === undefined) this.enumValue("attribute_type", attributeTypes, value[i], `${pointer}/${i}`);
      else {
        if (seen.has(n)) this.fail("attribute_type", `${pointer}/${i}`, repeatedAttributeType(value[i]));
        seen.add(n);
      }
    });
  }

  time(field: "start_at" | "end_at", raw: unknown, pointer: string): void {
    const value = this.at(field, raw, pointer);
    if (value === undefined) return;
    const parsed = typeof value === "string" ? parseRfc3339(value) : null;
    if (!parsed) {
      this.fail(field, pointer, dateTimeProblem(field, value));
      return;
    }
    const ts = create(TimestampSchema, parsed);
    if (field === "start_at") this.input.startAt = ts;
    else this.input.endAt = ts;
  }

  geometry(raw: unknown, pointer: string): void {
    const value = this.at("geometry", raw, pointer);
    if (value === undefined) return;
    const geometry = decodeGeometry(value, pointer, (p, detail) => this.fail("geometry", p, detail));
    if (geometry) this.input.geometry = geometry;
  }

  optional(json: Json, base: string, present: (key: string) => boolean = (key) => key in json): void {
    for (const field of OPTIONAL_FIELDS) {
      if (!present(field)) continue;
      const pointer = `${base}/${field}`;
      const value = json[field];
      switch (field) {
        case "methodology":
        case "steward_id":
        case "project_id":
          this.text(field, value, pointer);
          break;
        case "tags":
          this.tags(value, pointer);
          break;
        case "outcome_reporting_year":
          this.year(value, pointer);
          break;
        case "source_type":
          this.sourceType(value, pointer);
          break;
        case "attribute_type":
          this.attributeType(value, pointer);
          break;
        case "geometry_source":
          this.geometrySource(value, pointer);
          break;
      }
    }
  }
}

// The shape of an RFC 3339 date-time, with the offset optional so a missing one can be named.
const DATE_TIME_SHAPE = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?<offset>[Zz]|[+-]\d{2}:\d{2})?$/;

/** Why `value` is not an RFC 3339 date-time with an offset, in terms a client can act on. */
function dateTimeProblem(field: string, value: unknown): string {
  const expected = `${field} must be an RFC 3339 date-time with a time zone offset, like 2024-01-01T00:00:00Z`;
  if (typeof value !== "string") return `${expected}; got ${preview(value)}`;
  const shape = DATE_TIME_SHAPE.exec(value);
  if (shape && shape.groups?.offset === undefined) {
    return `${expected}; ${preview(value)} has no offset (add Z for UTC or +hh:mm)`;
  }
  if (shape)
    return (
      `${field} ${preview(value)} is not a real date and time ` +
      "(check the day of the month, hours, minutes and offset)"
    );
  return `${expected}; got ${preview(value)}`;
}

type Report = (pointer: string, detail: string) => void;

/**
 * What is wrong with a position's altitude (its third value), if it has one: dropped once read, but
 * a position is 2 or 3 finite numbers (a literal like 1e400 parses as Infinity).
 */
export function altitudeProblem(position: readonly unknown[]): string | undefined {
  if (position.length < 3 || Number.isFinite(position[2])) return undefined;
  return `an altitude must be a finite number (altitudes are accepted and dropped), got ${preview(position[2])}`;
}

function decodeRing(ring: unknown, pointer: string, report: Report): number[] | null {
  if (!Array.isArray(ring)) {
    report(pointer, `a linear ring must be an array of positions, got ${describe(ring)}`);
    return null;
  }
  const flat = new Array<number>(ring.length * 2);
  for (let i = 0; i < ring.length; i++) {
    const position: unknown = ring[i];
    if (
      !Array.isArray(position) ||
      position.length < 2 ||
      position.length > 3 ||
      // Each read by index: a closure per position (every) would allocate on every one.
      typeof position[0] !== "number" ||
      typeof position[1] !== "number" ||
      (position.length === 3 && typeof position[2] !== "number")
    ) {
      report(
        `${pointer}/${i}`,
        `a position must be an array of 2 or 3 numbers (longitude, latitude[, altitude]), got ${preview(position)}`,
      );
      return null;
    }
    const altitude = altitudeProblem(position);
    if (altitude !== undefined) {
      report(`${pointer}/${i}/2`, altitude);
      return null;
    }
    // Altitudes are accepted and dropped (docs/api.md §5).
    flat[2 * i] = position[0] as number;
    flat[2 * i + 1] = position[1] as number;
  }
  return flat;
}

function decodePolygon(rings: unknown, pointer: string, report: Report): { rings: { coordinates: number[] }[] } | null {
  if (!Array.isArray(rings)) {
    report(pointer, `polygon coordinates must be an array of linear rings, got ${describe(rings)}`);
    return null;
  }
  const out: { coordinates: number[] }[] = [];
  for (let r = 0; r < rings.length; r++) {
    const flat = decodeRing(rings[r], `${pointer}/${r}`, report);
    if (!flat) return null;
    out.push({ coordinates: flat });
  }
  return { rings: out };
}

/** GeoJSON geometry JSON → proto Geometry, or null after reporting why not. */
export function decodeGeometry(value: unknown, pointer: string, report: Report): Geometry | null {
  if (!isObject(value)) {
    report(pointer, `geometry must be a GeoJSON Polygon or MultiPolygon object, got ${describe(value)}`);
    return null;
  }
  const coordinates = value.coordinates;
  if (value.type === "Polygon") {
    const polygon = decodePolygon(coordinates, `${pointer}/coordinates`, report);
    return polygon && create(GeometrySchema, { kind: { case: "polygon", value: polygon } });
  }
  if (value.type === "MultiPolygon") {
    if (!Array.isArray(coordinates)) {
      report(
        `${pointer}/coordinates`,
        `MultiPolygon coordinates must be an array of polygons, got ${describe(coordinates)}`,
      );
      return null;
    }
    const polygons = [];
    for (let p = 0; p < coordinates.length; p++) {
      const polygon = decodePolygon(coordinates[p], `${pointer}/coordinates/${p}`, report);
      if (!polygon) return null;
      polygons.push(polygon);
    }
    return create(GeometrySchema, { kind: { case: "multiPolygon", value: { polygons } } });
  }
  report(`${pointer}/type`, `geometry type must be "Polygon" or "MultiPolygon", got ${preview(value.type ?? null)}`);
  return null;
}

/** The names of WGS 84 longitude/latitude a GeoJSON `crs` member may give (RFC 7946 has no `crs`). */
const WGS84_NAMES = new Set(
  [
    "urn:ogc:def:crs:OGC:1.3:CRS84",
    "urn:ogc:def:crs:OGC::CRS84",
    "http://www.opengis.net/def/crs/OGC/1.3/CRS84",
    "OGC:CRS84",
    "CRS84",
    "EPSG:4326",
    "urn:ogc:def:crs:EPSG::4326",
    "urn:ogc:def:crs:EPSG:6.6:4326",
    "http://www.opengis.net/def/crs/EPSG/0/4326",
  ].map((name) => name.toLowerCase()),
);

/**
 * A `crs` member (GeoJSON 2008, still written by GIS exports) naming anything but CRS84 / EPSG:4326
 * (docs/api.md §5.4): the coordinates are not longitude/latitude, and no amount of per-vertex
 * violations says so as clearly.
 */
function checkCrs(json: Json, pointer: string, violations: Violation[], source?: number): void {
  const crs = json.crs;
  if (crs === undefined || crs === null) return;
  const name = isObject(crs) && isObject(crs.properties) ? crs.properties.name : undefined;
  if (typeof name === "string" && WGS84_NAMES.has(name.toLowerCase())) return;
  const named = typeof name === "string" ? preview(name) : preview(crs);
  violations.push({
    source,
    field: "crs",
    pointer: `${pointer}/crs`,
    detail:
      `crs names ${named}; coordinates must be WGS 84 longitude/latitude (CRS84 / EPSG:4326): ` +
      "reproject the data to EPSG:4326 (for example with ogr2ogr -t_srs EPSG:4326) and leave crs out",
  });
}

function decodeFeature(
  feature: unknown,
  base: string,
  index: number,
  defaults: Json | null,
  violations: Violation[],
): SourceDecoder {
  const decoder = new SourceDecoder(index, violations);
  const propertiesPointer = `${base}/properties`;
  for (const [field, pointer] of [
    ["alt_id", `${base}/id`],
    ["geometry", `${base}/geometry`],
    ["start_at", `${propertiesPointer}/start_at`],
    ["end_at", `${propertiesPointer}/end_at`],
  ]) {
    decoder.pointers.set(field, pointer);
  }
  if (!isObject(feature)) {
    violations.push({
      source: index,
      field: WHOLE_SOURCE,
      pointer: base,
      detail: `a feature must be a GeoJSON Feature object, got ${describe(feature)}`,
    });
    return decoder;
  }
  checkCrs(feature, base, violations, index);
  if (feature.type !== "Feature") {
    violations.push({
      source: index,
      field: "type",
      pointer: `${base}/type`,
      detail: `type must be "Feature", got ${preview(feature.type ?? null)}`,
    });
  }
  let properties: Json = {};
  if (isObject(feature.properties)) properties = feature.properties;
  else if (feature.properties !== undefined && feature.properties !== null) {
    violations.push({
      source: index,
      field: "properties",
      pointer: propertiesPointer,
      detail: `properties must be an object, got ${describe(feature.properties)}`,
    });
  }
  const idValue = feature.id ?? null;
  const propertyAltId = properties.alt_id ?? null;
  if (idValue !== null && propertyAltId !== null && idValue !== propertyAltId) {
    violations.push({
      source: index,
      field: "alt_id",
      pointer: `${propertiesPointer}/alt_id`,
      detail:
        `the feature's id (${preview(idValue)}) and properties.alt_id (${preview(propertyAltId)}) differ; ` +
        "give one alt_id",
    });
  } else if (idValue !== null) decoder.altId(idValue, `${base}/id`);
  else if (propertyAltId !== null) decoder.altId(propertyAltId, `${propertiesPointer}/alt_id`);
  if (defaults) decoder.optional(defaults, "", (key) => key in defaults && !(key in properties));
  decoder.optional(properties, propertiesPointer);
  decoder.geometry(feature.geometry, `${base}/geometry`);
  decoder.time("start_at", properties.start_at, `${propertiesPointer}/start_at`);
  decoder.time("end_at", properties.end_at, `${propertiesPointer}/end_at`);
  return decoder;
}

function decodeFlat(body: Json, violations: Violation[]): SourceDecoder {
  const decoder = new SourceDecoder(0, violations);
  for (const field of ["alt_id", "geometry", "start_at", "end_at"]) decoder.pointers.set(field, `/${field}`);
  decoder.altId(body.alt_id, "/alt_id");
  decoder.optional(body, "");
  decoder.geometry(body.geometry, "/geometry");
  decoder.time("start_at", body.start_at, "/start_at");
  decoder.time("end_at", body.end_at, "/end_at");
  return decoder;
}

/** The create body shapes an adapter takes: REST all three of docs/api.md §4, OGC API's Part 4 GeoJSON only. */
export type CreateShapes = "all" | "geojson";

const SHAPES_TAKEN: Record<CreateShapes, string> = {
  all: "a GeoJSON FeatureCollection, a Feature, or a source object",
  geojson: "a GeoJSON Feature or FeatureCollection",
};

/**
 * A create body in the shapes `shapes` names (docs/api.md §4) → CreateSourcesRequest. JSON-level
 * problems (wrong types, unknown names, unparseable dates) are reported here with pointers into
 * the body; every other rule is the service's (ledger/validate.ts), for every protocol alike.
 */
export function decodeCreateBody(body: unknown, shapes: CreateShapes = "all"): DecodedCreate {
  const violations: Violation[] = [];
  const request = create(CreateSourcesRequestSchema);
  const map: CreateBodyMap = { sourcesPointer: "", fields: [] };
  let shape: CreateBodyShape = null;
  let decoders: SourceDecoder[] = [];
  const flatTaken = shapes === "all";
  if (!isObject(body)) {
    violations.push({
      field: "sources",
      pointer: "",
      detail: `the body must be ${SHAPES_TAKEN[shapes]}, got ${describe(body)}`,
    });
  } else if (body.type === undefined && !flatTaken) {
    violations.push({
      field: "sources",
      pointer: "/type",
      detail: `the body must be ${SHAPES_TAKEN[shapes]}, got an object without type (POST /sources also takes a flat source object)`,
    });
  } else if (body.type === "FeatureCollection") {
    shape = "FeatureCollection";
    map.sourcesPointer = "/features";
    checkCrs(body, "", violations);
    const features = body.features;
    if (!Array.isArray(features)) {
      violations.push({
        field: "sources",
        pointer: "/features",
        detail: `features must be an array of Feature objects, got ${describe(features)}`,
      });
    } else if (features.length > MAX_SOURCES_PER_REQUEST) {
      violations.push({
        field: "sources",
        pointer: "/features",
        detail: `at most ${MAX_SOURCES_PER_REQUEST} sources are allowed in one request, got ${features.length}`,
      });
    } else {
      decoders = features.map((feature, i) => decodeFeature(feature, `/features/${i}`, i, body, violations));
    }
  } else if (body.type === "Feature") {
    shape = "Feature";
    decoders = [decodeFeature(body, "", 0, null, violations)];
  } else if (body.type === undefined) {
    shape = "flat";
    checkCrs(body, "", violations, 0);
    decoders = [decodeFlat(body, violations)];
  } else {
    violations.push({
      field: "sources",
      pointer: "/type",
      detail: `type must be "FeatureCollection" or "Feature"${flatTaken ? ", or absent for a flat source" : ""}; got ${preview(body.type)}`,
    });
  }
  request.sources = decoders.map((d) => d.input);
  map.fields = decoders.map((d) => d.pointers);
  return { request, map, shape, violations };
}
