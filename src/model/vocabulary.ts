import type { DescEnum } from "@bufbuild/protobuf";
import {
  AttributeTypeSchema,
  GeometrySourceSchema,
  SourceTypeSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";

/**
 * The closed vocabularies of contract §5, derived from the proto enums so that the proto stays
 * the one source of truth: the REST name of a value is its proto name after the enum's prefix
 * (SOURCE_TYPE_FIELD → FIELD).
 */
export interface Vocabulary {
  /** Upper-case names, in proto order, without UNSPECIFIED. */
  readonly names: readonly string[];
  nameOf(value: number): string | undefined;
  valueOf(name: string): number | undefined;
}

function vocabularyOf(schema: DescEnum): Vocabulary {
  const known = schema.values.filter((v) => v.number !== 0);
  const byNumber = new Map(known.map((v) => [v.number, v.localName]));
  const byName = new Map(known.map((v) => [v.localName, v.number]));
  return {
    names: known.map((v) => v.localName),
    nameOf: (value) => byNumber.get(value),
    valueOf: (name) => byName.get(name),
  };
}

export const sourceTypes = vocabularyOf(SourceTypeSchema);
export const attributeTypes = vocabularyOf(AttributeTypeSchema);
export const geometrySources = vocabularyOf(GeometrySourceSchema);
