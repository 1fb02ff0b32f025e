import { SourceLedgerService } from "../../../gen/sourceledger/v2/source_ledger_pb.js";
import type { Environment } from "../../model/list-query.js";
import { GEOJSON_CONTENT_TYPE } from "../answer-format.js";
import { REST_FORMAT_PARAMETER } from "./formats.js";
import { listFieldParameter, listQueryParameters } from "./list-parameters.js";
import { arrayOf, contentOf, JSON_TYPE, NEXT_LINK_HEADER, pathParameter, protectedBy } from "./operations.js";
import { schemaRef } from "./refs.js";
import { problems } from "./responses.js";
import type { Operation, Paths, RequestBody, Response } from "./types.js";

/** The REST paths of one environment (docs/api.md §4, §12–§14), as src/http/rest.ts registers them. */

const methods = SourceLedgerService.method;

/** What differs between the two environments' descriptions. */
interface EnvironmentNames {
  prefix: string;
  /** Operation id stem: `listSources`, `listSandboxSources`. */
  noun: string;
  tag: string;
  searchBody: string;
}

export const REST_TAGS = { production: "Sources", sandbox: "Sandbox" } as const;

const NAMES: Readonly<Record<Environment, EnvironmentNames>> = {
  production: { prefix: "", noun: "Sources", tag: REST_TAGS.production, searchBody: "SearchBody" },
  sandbox: { prefix: "/sandbox", noun: "SandboxSources", tag: REST_TAGS.sandbox, searchBody: "SandboxSearchBody" },
};

/** A page of records: the JSON array, or a GeoJSON FeatureCollection (f=geojson or Accept). */
const page: Response = {
  description: "A page of records, in list order (created_at, then id).",
  headers: NEXT_LINK_HEADER,
  content: {
    [JSON_TYPE]: { schema: arrayOf(schemaRef("SourceRecord")) },
    [GEOJSON_CONTENT_TYPE]: { schema: schemaRef("SourceFeatureCollection") },
  },
};

const body = (schema: string, description: string): RequestBody => ({
  description,
  required: true,
  content: contentOf(schemaRef(schema), JSON_TYPE, GEOJSON_CONTENT_TYPE),
});

const deleted: Response = { description: "Deleted; an empty body." };

/** Fails the same way everywhere once the token is checked. */
const AUTH = [401, 403, 429, 500, 503] as const;

export function restPaths(environment: Environment): Paths {
  const { prefix, noun, tag, searchBody } = NAMES[environment];
  const base = `${prefix}/sources`;
  const id = pathParameter("id", "The record's id.");
  const accountId = listFieldParameter("account_id", "Admins only: the account the operation acts in.");
  const paged = [id, listFieldParameter("limit"), listFieldParameter("page_token")];
  const sandboxNote = environment === "sandbox" ? " In the caller's sandbox session (in memory, never analysed)." : "";

  const list: Operation = {
    operationId: `list${noun}`,
    summary: "List records",
    description: `The caller's records matching every filter given; keyset pages linked by \`Link\`.${sandboxNote}`,
    tags: [tag],
    parameters: [...listQueryParameters(environment), REST_FORMAT_PARAMETER],
    responses: { 200: page, ...problems(406, 422, ...AUTH) },
    security: protectedBy(methods.listSources.name),
  };
  const create: Operation = {
    operationId: `create${noun}`,
    summary: "Create records",
    description: `From a FeatureCollection, a Feature or a flat source; 201 with the records in request order.${sandboxNote}`,
    tags: [tag],
    parameters: [accountId],
    requestBody: body("CreateBody", "Up to 1,000 sources; all or nothing."),
    responses: {
      201: { description: "The created records.", content: contentOf(arrayOf(schemaRef("SourceRecord")), JSON_TYPE) },
      ...problems(409, 413, 415, 422, ...AUTH),
    },
    security: protectedBy(methods.createSources.name),
  };
  const deleteByAltId: Operation = {
    operationId: `delete${noun}ByAltId`,
    summary: "Delete a record by alt_id",
    tags: [tag],
    parameters: [
      { ...listFieldParameter("alt_id", "The alt_id of the live record to delete."), required: true },
      { ...accountId, description: "Admins only, and required for them." },
    ],
    responses: { 204: deleted, ...problems(404, 422, ...AUTH) },
    security: protectedBy(methods.deleteSource.name),
  };
  const search: Operation = {
    operationId: `search${noun}`,
    summary: "Search records by area",
    description:
      "Records whose exact geometry intersects the area (touching counts), with any list filter; the next page is the same body posted to the `Link`'s URL.",
    tags: [tag],
    parameters: [
      listFieldParameter("page_token", "The next page's token, from the `Link` of the previous answer."),
      REST_FORMAT_PARAMETER,
    ],
    requestBody: body(searchBody, "The area and the filters."),
    responses: { 200: page, ...problems(406, 413, 415, 422, ...AUTH) },
    security: protectedBy(methods.searchSources.name),
  };
  const get: Operation = {
    operationId: `get${noun.replace(/s$/, "")}`,
    summary: "Get a record",
    tags: [tag],
    parameters: [id, listFieldParameter("as_of"), REST_FORMAT_PARAMETER],
    responses: {
      200: {
        description: "The record, or its GeoJSON Feature.",
        content: {
          [JSON_TYPE]: { schema: schemaRef("SourceRecord") },
          [GEOJSON_CONTENT_TYPE]: { schema: schemaRef("SourceFeature") },
        },
      },
      ...problems(404, 406, 422, ...AUTH),
    },
    security: protectedBy(methods.getSource.name),
  };
  const deleteById: Operation = {
    operationId: `delete${noun.replace(/s$/, "")}`,
    summary: "Delete a record",
    tags: [tag],
    parameters: [id, accountId],
    responses: { 204: deleted, ...problems(404, 422, ...AUTH) },
    security: protectedBy(methods.deleteSource.name),
  };
  const events: Operation = {
    operationId: `list${noun.replace(/s$/, "")}Events`,
    summary: "A record's history",
    description: "Every change, oldest first; also after the record was deleted.",
    tags: [tag],
    parameters: paged,
    responses: {
      200: {
        description: "The events.",
        headers: NEXT_LINK_HEADER,
        content: contentOf(arrayOf(schemaRef("SourceEvent")), JSON_TYPE),
      },
      ...problems(404, 422, ...AUTH),
    },
    security: protectedBy(methods.listSourceEvents.name),
  };
  const conflicts: Operation = {
    operationId: `list${noun.replace(/s$/, "")}Conflicts`,
    summary: "A record's conflicts",
    description: `The live record's current conflicts, oldest first, each explained.${environment === "sandbox" ? " Always [] in the sandbox." : ""}`,
    tags: [tag],
    parameters: paged,
    responses: {
      200: {
        description: "The conflicts.",
        headers: NEXT_LINK_HEADER,
        content: contentOf(arrayOf(schemaRef("SourceConflict")), JSON_TYPE),
      },
      ...problems(404, 422, ...AUTH),
    },
    security: protectedBy(methods.listConflicts.name),
  };

  return {
    [base]: {
      description: "Other methods answer 405 with `Allow: GET, POST, DELETE`.",
      get: list,
      post: create,
      delete: deleteByAltId,
    },
    [`${base}/search`]: { description: "Other methods answer 405 with `Allow: POST`.", post: search },
    [`${base}/{id}`]: {
      description: "Other methods answer 405 with `Allow: GET, DELETE`.",
      get,
      delete: deleteById,
    },
    [`${base}/{id}/history`]: { get: events },
    [`${base}/{id}/conflicts`]: { get: conflicts },
  };
}
