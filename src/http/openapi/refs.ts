import type { Reference } from "./types.js";

/** A reference to a schema of the document's `components.schemas`. */
export function schemaRef(name: string): Reference {
  return { $ref: `#/components/schemas/${name}` };
}

/** A reference to a response of the document's `components.responses`. */
export function responseRef(name: string): Reference {
  return { $ref: `#/components/responses/${name}` };
}
