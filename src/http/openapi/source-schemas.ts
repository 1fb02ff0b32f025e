import { MAX_SOURCES_PER_REQUEST, MAX_TAG, MAX_TAGS, MAX_TEXT, MAX_YEAR, MIN_YEAR } from "../../ledger/rules.js";
import type { SourceEventType } from "../../model/history.js";
import { attributeTypes, geometrySources, sourceTypes, type Vocabulary } from "../../model/vocabulary.js";
import { schemaRef } from "./refs.js";
import type { Schema, SchemaOrRef } from "./types.js";

/**
 * Sources as the API reads and writes them: the record (docs/api.md §4.4, src/http/rest-render.ts),
 * its GeoJSON Feature (§16), create bodies (§4.3) and history (§14). Field rules come from the
 * ledger's rules and the proto's vocabularies, so the description cannot drift from what is enforced.
 */

/** Times in answers: UTC with exactly three fraction digits (docs/api.md §4.4). */
const UTC_MILLIS: Schema = {
  type: "string",
  format: "date-time",
  pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$",
  example: "2024-01-01T00:00:00.000Z",
};
/** Times in requests: RFC 3339 with an offset or Z (docs/api.md §5.5). */
const INSTANT: Schema = { type: "string", format: "date-time", example: "2024-01-01T00:00:00Z" };

const text = (nullable: boolean): Schema => ({
  type: "string",
  minLength: 1,
  maxLength: MAX_TEXT,
  ...(nullable ? { nullable: true } : {}),
});

/** An upper-case name of a vocabulary; OpenAPI 3.0.3 wants null listed when it is allowed. */
export function vocabularySchema(vocabulary: Vocabulary, nullable = false): Schema {
  return nullable
    ? { type: "string", enum: [...vocabulary.names, null], nullable: true }
    : { type: "string", enum: vocabulary.names };
}

const tags: Schema = {
  type: "array",
  maxItems: MAX_TAGS,
  items: { type: "string", minLength: 1, maxLength: MAX_TAG },
};
const attributeTypeList: Schema = { type: "array", uniqueItems: true, items: vocabularySchema(attributeTypes) };
const year = (nullable: boolean): Schema => ({
  type: "integer",
  minimum: MIN_YEAR,
  maximum: MAX_YEAR,
  ...(nullable ? { nullable: true } : {}),
});

/** The optional fields of a source, as a create takes them: `null` means the same as absent. */
function optionalFields(): Record<string, SchemaOrRef> {
  return {
    methodology: text(true),
    tags: { ...tags, nullable: true },
    steward_id: text(true),
    project_id: text(true),
    outcome_reporting_year: year(true),
    source_type: vocabularySchema(sourceTypes, true),
    attribute_type: { ...attributeTypeList, nullable: true },
    geometry_source: vocabularySchema(geometrySources, true),
  };
}

/** A record's members besides `id` and `geometry`, in the answer's order around the geometry. */
function recordMembers(): { before: Record<string, SchemaOrRef>; after: Record<string, SchemaOrRef> } {
  return {
    before: {
      alt_id: text(false),
      methodology: text(true),
      tags,
      steward_id: text(true),
      project_id: text(true),
      outcome_reporting_year: year(true),
      source_type: vocabularySchema(sourceTypes, true),
      attribute_type: attributeTypeList,
      geometry_source: vocabularySchema(geometrySources, true),
    },
    after: {
      start_at: UTC_MILLIS,
      end_at: UTC_MILLIS,
      account_id: { type: "string", description: "The owning account." },
      created_by: { type: "string", description: "The creator's client name claim, else its subject." },
      updated_by: { type: "string" },
      created_at: UTC_MILLIS,
      updated_at: { ...UTC_MILLIS, description: "Always equal to created_at: the API has no update." },
      conflict: { type: "boolean", description: "Conflicts with another live source (always false in the sandbox)." },
      unep_overlap: schemaRef("UnepOverlap"),
    },
  };
}

/** A closed object: every member listed is always present, and no other (docs/api.md §4.4). */
function closed(properties: Record<string, SchemaOrRef>, description?: string): Schema {
  return {
    type: "object",
    ...(description ? { description } : {}),
    required: Object.keys(properties),
    properties,
    additionalProperties: false,
  };
}

/** `schema` with `name` no longer required. */
function withOptional(schema: Schema, name: string): Schema {
  return { ...schema, required: (schema.required ?? []).filter((required) => required !== name) };
}

const ID: Schema = {
  type: "string",
  description: "`src_` + a ULID in production, `sandbox_` + a UUID v4 in the sandbox.",
  example: "src_01J9Z3K8M4V7Q2X5R6T8W0Y1AB",
};

/** Compile-time complete: a new event type fails to compile until it is described here. */
const EVENT_TYPES: Readonly<Record<SourceEventType, true>> = {
  created: true,
  conflict_set: true,
  conflict_cleared: true,
  deleted: true,
};

const fraction: Schema = { type: "number", minimum: 0, maximum: 1 };

/** A conflict's measures, shared by GET …/conflicts and `conflict_set` events. */
function explanation(): Record<string, SchemaOrRef> {
  return {
    overlap_area_m2: { type: "number", minimum: 0, description: "Geodesic square metres both cover." },
    overlap_fraction: { ...fraction, description: "The overlap as a fraction of this source's area." },
    counterpart_overlap_fraction: { ...fraction, description: "The overlap as a fraction of the counterpart's." },
    overlap_period: closed({ start_at: UTC_MILLIS, end_at: UTC_MILLIS }),
    shared_attribute_types: { ...attributeTypeList, description: "`[]` when either side is untyped." },
    [UPPER_BOUND]: {
      type: "boolean",
      enum: [true],
      description:
        "Only when no overlay could measure the pair (docs/api.md §8.5): overlap_area_m2 is the smaller source's whole area, an upper bound.",
    },
  };
}

/** The one member of an explanation that is absent on a measured pair. */
const UPPER_BOUND = "overlap_area_upper_bound";

function sourceSchemas(): Record<string, Schema> {
  const { before, after } = recordMembers();
  const fields = optionalFields();
  const times = { start_at: INSTANT, end_at: INSTANT };
  const inputFeature: Schema = {
    type: "object",
    description: "`id` is the alt_id (or `properties.alt_id`); unknown members are ignored.",
    required: ["type", "geometry", "properties"],
    properties: {
      type: { type: "string", enum: ["Feature"] },
      id: text(false),
      geometry: schemaRef("InputGeometry"),
      properties: {
        type: "object",
        required: ["start_at", "end_at"],
        properties: { alt_id: text(false), ...times, ...fields },
      },
    },
  };
  return {
    SourceRecord: closed(
      { id: ID, ...before, geometry: schemaRef("Geometry"), ...after },
      "A source (docs/api.md §4.4): every key always present, absent values null, lists [] when empty.",
    ),
    SourceProperties: closed({ ...before, ...after }, "The record's members other than id and geometry."),
    SourceFeature: {
      type: "object",
      required: ["type", "id", "geometry", "properties"],
      properties: {
        type: { type: "string", enum: ["Feature"] },
        id: ID,
        geometry: schemaRef("Geometry"),
        properties: schemaRef("SourceProperties"),
        links: { type: "array", items: schemaRef("Link"), description: "OGC answers only." },
      },
      additionalProperties: false,
    },
    SourceFeatureCollection: {
      type: "object",
      required: ["type", "features", "numberReturned", "links"],
      properties: {
        type: { type: "string", enum: ["FeatureCollection"] },
        features: { type: "array", items: schemaRef("SourceFeature") },
        timeStamp: { ...UTC_MILLIS, description: "OGC answers only: when the page was made." },
        numberReturned: { type: "integer", minimum: 0 },
        links: { type: "array", items: schemaRef("Link"), description: "`next` when more records follow." },
      },
      additionalProperties: false,
    },
    UnepOverlap: {
      type: "object",
      nullable: true,
      description: "Overlap with protected areas; null while no layer is loaded, and always in the sandbox.",
      required: ["dataset", "overlaps", "area_m2", "fraction", "areas"],
      properties: {
        dataset: { type: "string" },
        overlaps: { type: "boolean" },
        area_m2: { type: "number", minimum: 0 },
        fraction,
        areas: {
          type: "array",
          maxItems: 20,
          items: closed({
            id: { type: "string" },
            name: { type: "string" },
            designation: { type: "string" },
            iucn_category: { type: "string" },
            area_m2: { type: "number", minimum: 0 },
          }),
        },
      },
      additionalProperties: false,
    },
    FlatSource: {
      type: "object",
      description: "A source with its fields at the top level (no `type`); unknown members are ignored.",
      required: ["alt_id", "geometry", "start_at", "end_at"],
      properties: { alt_id: text(false), geometry: schemaRef("InputGeometry"), ...times, ...fields },
      // A body with a `type` is read as a Feature or a FeatureCollection, never as a flat source.
      not: { required: ["type"], properties: { type: {} } },
    },
    InputFeature: inputFeature,
    InputFeatureCollection: {
      type: "object",
      description: "Optional fields set on the collection apply to every feature whose properties leave them out.",
      required: ["type", "features"],
      properties: {
        type: { type: "string", enum: ["FeatureCollection"] },
        features: { type: "array", minItems: 1, maxItems: MAX_SOURCES_PER_REQUEST, items: schemaRef("InputFeature") },
        ...fields,
      },
    },
    CreateBody: {
      description: "All or nothing: one bad source and nothing is stored (docs/api.md §4.3).",
      oneOf: [schemaRef("InputFeatureCollection"), schemaRef("InputFeature"), schemaRef("FlatSource")],
    },
    Counterpart: {
      description:
        "The other side: {id, alt_id} in the caller's account, {ref} (opaque, stable for the pair) in another, {id, alt_id, account_id} for admins.",
      oneOf: [
        closed({ id: ID, alt_id: text(false) }),
        closed({ ref: { type: "string" } }),
        closed({ id: ID, alt_id: text(false), account_id: { type: "string" } }),
      ],
    },
    SourceConflict: withOptional(
      closed({ counterpart: schemaRef("Counterpart"), ...explanation(), detected_at: UTC_MILLIS }),
      UPPER_BOUND,
    ),
    SourceEvent: {
      type: "object",
      description:
        "A change to a source: `created` carries the record, `conflict_set` and `conflict_cleared` the counterpart (and `conflict_set` the measures).",
      required: ["seq", "type", "at", "by"],
      properties: {
        seq: { type: "integer", minimum: 1 },
        type: { type: "string", enum: Object.keys(EVENT_TYPES) },
        at: UTC_MILLIS,
        by: { type: "string", nullable: true, description: "null when the change may have come from another account." },
        counterpart: schemaRef("Counterpart"),
        ...explanation(),
        record: schemaRef("SourceRecord"),
      },
      additionalProperties: false,
    },
  };
}

export const SOURCE_SCHEMAS: Readonly<Record<string, Schema>> = sourceSchemas();
