import type { DescEnum } from "@bufbuild/protobuf";
import {
  AttributeTypeSchema,
  GeometrySourceSchema,
  SourceTypeSchema,
} from "../../gen/sourceledger/v2/source_ledger_pb.js";

/**
 * The closed vocabularies of docs/api.md §5, derived from the proto enums so that the proto stays
 * the one source of truth: the REST name of a value is its proto name after the enum's prefix
 * (SOURCE_TYPE_FIELD → FIELD).
 */
export interface Vocabulary {
  /** Upper-case names, in proto order, without UNSPECIFIED. */
  readonly names: readonly string[];
  nameOf(value: number): string | undefined;
  valueOf(name: string): number | undefined;
  /** Why `value`, a proto enum number, is refused for `field`. */
  unknownNumber(field: string, value: number): string;
  /**
   * Why `rendered` (the client's text, already quoted or previewed) is refused for `field`;
   * `caseHint` adds that names are exact and upper case.
   */
  unknownName(field: string, rendered: string, caseHint?: boolean): string;
}

function vocabularyOf(schema: DescEnum): Vocabulary {
  const known = schema.values.filter((v) => v.number !== 0);
  const byNumber = new Map(known.map((v) => [v.number, v.localName]));
  const byName = new Map(known.map((v) => [v.localName, v.number]));
  const names = known.map((v) => v.localName);
  const list = names.join(", ");
  return {
    names,
    nameOf: (value) => byNumber.get(value),
    valueOf: (name) => byName.get(name),
    unknownNumber: (field, value) => `${field} ${value} is not one of ${list}`,
    unknownName: (field, rendered, caseHint = false) =>
      `${field} must be one of ${list}${caseHint ? " (exact, upper case)" : ""}, got ${rendered}`,
  };
}

export const sourceTypes = vocabularyOf(SourceTypeSchema);
export const attributeTypes = vocabularyOf(AttributeTypeSchema);
export const geometrySources = vocabularyOf(GeometrySourceSchema);

/** The vocabulary of each enum the API uses, by the enum's full proto name. */
export const vocabularyOfEnum: ReadonlyMap<string, Vocabulary> = new Map([
  [SourceTypeSchema.typeName, sourceTypes],
  [AttributeTypeSchema.typeName, attributeTypes],
  [GeometrySourceSchema.typeName, geometrySources],
]);
