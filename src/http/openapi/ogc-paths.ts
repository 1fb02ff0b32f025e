import { SourceLedgerService } from "../../../gen/sourceledger/v2/source_ledger_pb.js";
import { GEOJSON_CONTENT_TYPE } from "../answer-format.js";
import { OGC_BASE, OGC_COLLECTIONS, type OgcCollection } from "../ogc/documents.js";
import { OGC_DOCUMENT_FORMAT_PARAMETER, OGC_ITEMS_FORMAT_PARAMETER } from "./formats.js";
import { listFieldParameter, ogcItemsParameters } from "./list-parameters.js";
import { contentOf, JSON_TYPE, NEXT_LINK_HEADER, PUBLIC, pathParameter, protectedBy } from "./operations.js";
import { schemaRef } from "./refs.js";
import { problems } from "./responses.js";
import type { Operation, Paths, Response } from "./types.js";

/**
 * OGC API – Features (docs/api.md §16) as src/http/ogc registers it: the documents that describe
 * the service (no token), and each collection's items (a bearer token, like /sources).
 */

export const OGC_TAG = "OGC API – Features";

const methods = SourceLedgerService.method;

const AUTH = [401, 403, 429, 500, 503] as const;

/** An OGC document: JSON only, public. */
function document(operationId: string, summary: string, schema: string, extra: Partial<Operation> = {}): Operation {
  return {
    operationId,
    summary,
    tags: [OGC_TAG],
    parameters: [OGC_DOCUMENT_FORMAT_PARAMETER, ...(extra.parameters ?? [])],
    responses: {
      200: { description: summary, content: contentOf(schemaRef(schema), JSON_TYPE) },
      ...problems(400, 406),
      ...(extra.responses ?? {}),
    },
    security: PUBLIC,
  };
}

/** `sandbox-sources` → `SandboxSources`: the stem of the collection's operation ids. */
function stemOf(collection: OgcCollection): string {
  return collection.id.replace(/(^|-)([a-z])/g, (_match, _dash: string, letter: string) => letter.toUpperCase());
}

/** Items answer GeoJSON, named application/json when the Accept header admits only that. */
const geojson = (schema: string) => contentOf(schemaRef(schema), GEOJSON_CONTENT_TYPE, JSON_TYPE);

function itemsPaths(collection: OgcCollection): Paths {
  const stem = stemOf(collection);
  const items = `${OGC_BASE}/collections/${collection.id}/items`;
  const featureId = pathParameter("featureId", "The item's id: the record's id.");
  const accountId = listFieldParameter("account_id", "Admins only: the account the operation acts in.");
  const single = stem.replace(/s$/, "");
  const created: Response = {
    description: "The created items: one Feature (with its Location) for a Feature, else a FeatureCollection.",
    headers: {
      Location: { description: "The new item's URL, when one Feature was sent.", schema: { type: "string" } },
    },
    content: {
      [GEOJSON_CONTENT_TYPE]: { schema: { oneOf: [schemaRef("SourceFeature"), schemaRef("SourceFeatureCollection")] } },
    },
  };
  return {
    [items]: {
      description: "Other methods answer 405 with `Allow: GET, POST`.",
      get: {
        operationId: `get${stem}Items`,
        summary: `${collection.title}: items`,
        description: `${collection.description} Pages are linked by absolute \`next\` links.`,
        tags: [OGC_TAG],
        parameters: ogcItemsParameters(collection.environment),
        responses: {
          200: {
            description: "A page of items.",
            headers: NEXT_LINK_HEADER,
            content: geojson("SourceFeatureCollection"),
          },
          ...problems(400, 406, ...AUTH),
        },
        security: protectedBy(methods.listSources.name),
      },
      post: {
        operationId: `create${stem}Items`,
        summary: `${collection.title}: create items`,
        description: "OGC API – Features Part 4: a Feature, or a FeatureCollection (all or nothing).",
        tags: [OGC_TAG],
        parameters: [accountId],
        requestBody: {
          required: true,
          content: contentOf(
            { oneOf: [schemaRef("InputFeature"), schemaRef("InputFeatureCollection")] },
            GEOJSON_CONTENT_TYPE,
            JSON_TYPE,
          ),
        },
        responses: { 201: created, ...problems(400, 409, 413, 415, 422, ...AUTH) },
        security: protectedBy(methods.createSources.name),
      },
    },
    [`${items}/{featureId}`]: {
      description: "Other methods answer 405 with `Allow: GET, DELETE`.",
      get: {
        operationId: `get${single}Item`,
        summary: `${collection.title}: one item`,
        tags: [OGC_TAG],
        parameters: [featureId, OGC_ITEMS_FORMAT_PARAMETER],
        responses: {
          200: { description: "The item, with self and collection links.", content: geojson("SourceFeature") },
          ...problems(400, 404, 406, ...AUTH),
        },
        security: protectedBy(methods.getSource.name),
      },
      delete: {
        operationId: `delete${single}Item`,
        summary: `${collection.title}: delete an item`,
        tags: [OGC_TAG],
        parameters: [featureId, accountId],
        responses: { 204: { description: "Deleted; an empty body." }, ...problems(400, 404, ...AUTH) },
        security: protectedBy(methods.deleteSource.name),
      },
    },
  };
}

export function ogcPaths(): Paths {
  const collectionId: Operation["parameters"] = [
    {
      name: "collectionId",
      in: "path",
      required: true,
      description: "Any other id answers 404.",
      schema: { type: "string", enum: OGC_COLLECTIONS.map((collection) => collection.id) },
    },
  ];
  return {
    [OGC_BASE]: { get: document("getLandingPage", "The landing page", "LandingPage") },
    [`${OGC_BASE}/conformance`]: { get: document("getConformance", "The conformance classes", "Conformance") },
    [`${OGC_BASE}/collections`]: { get: document("getCollections", "The collections", "Collections") },
    [`${OGC_BASE}/collections/{collectionId}`]: {
      get: document("getCollection", "One collection", "Collection", {
        parameters: collectionId,
        responses: problems(404),
      }),
    },
    ...Object.assign({}, ...OGC_COLLECTIONS.map(itemsPaths)),
  };
}
