/**
 * The parts of OpenAPI 3.0.3 this service's description uses, typed so that a misspelt keyword is
 * a compile error rather than a silently ignored member.
 */

export interface Reference {
  $ref: string;
}

export interface Schema {
  type?: "string" | "number" | "integer" | "boolean" | "array" | "object";
  format?: string;
  title?: string;
  description?: string;
  /** OpenAPI 3.0: with `type`, null is allowed too; an `enum` must list null itself (3.0.3). */
  nullable?: boolean;
  enum?: readonly (string | number | boolean | null)[];
  default?: unknown;
  example?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  items?: SchemaOrRef;
  properties?: Record<string, SchemaOrRef>;
  required?: readonly string[];
  additionalProperties?: boolean | SchemaOrRef;
  oneOf?: readonly SchemaOrRef[];
  anyOf?: readonly SchemaOrRef[];
  allOf?: readonly SchemaOrRef[];
  not?: SchemaOrRef;
}

export type SchemaOrRef = Schema | Reference;

export interface Parameter {
  name: string;
  in: "query" | "path" | "header";
  description?: string;
  required?: boolean;
  schema: SchemaOrRef;
  /** Query arrays: `form` with `explode` (repeated) or without (comma-separated, as `bbox`). */
  style?: "form" | "simple";
  explode?: boolean;
}

export interface MediaType {
  schema: SchemaOrRef;
  example?: unknown;
}

export type Content = Record<string, MediaType>;

export interface Header {
  description: string;
  /** Sent with every such answer. */
  required?: boolean;
  schema: SchemaOrRef;
}

export interface Response {
  description: string;
  headers?: Record<string, Header | Reference>;
  content?: Content;
}

export type Responses = Record<string, Response | Reference>;

export interface RequestBody {
  description?: string;
  required: boolean;
  content: Content;
}

export type SecurityRequirement = Record<string, string[]>;

export interface Operation {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  parameters?: (Parameter | Reference)[];
  requestBody?: RequestBody;
  responses: Responses;
  /** `[]` for public operations; otherwise the document's default (a bearer token) applies. */
  security?: SecurityRequirement[];
}

export type Method = "get" | "post" | "delete";

export type PathItem = Partial<Record<Method, Operation>> & { description?: string };

export type Paths = Record<string, PathItem>;
