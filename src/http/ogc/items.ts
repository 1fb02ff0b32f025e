import { create } from "@bufbuild/protobuf";
import type { FastifyInstance, FastifyRequest } from "fastify";
import {
  DeleteSourceRequestSchema,
  GetSourceRequestSchema,
  SourceLedgerService,
} from "../../../gen/sourceledger/v2/source_ledger_pb.js";
import { MAX_LIST_LIMIT } from "../../ledger/rules.js";
import type { Environment } from "../../model/list-query.js";
import type { SourceRecord } from "../../model/records.js";
import type { InProcessCaller } from "../../rpc/invoke.js";
import { FORMAT_PARAMETER, GEOJSON_CONTENT_TYPE } from "../answer-format.js";
import { queryPointer } from "../json-pointer.js";
import { sendProblem } from "../problem.js";
import {
  answerCreate,
  callFromRoute,
  nextLinkHeader,
  nextPageHref,
  type RequestFieldPointer,
  refuseOtherMethods,
  sendError,
} from "../rest-common.js";
import { listParametersOf, QueryReader, readListRequest } from "../rest-query.js";
import { type Link, renderFeatureBytes, renderFeatureCollection } from "../rest-render.js";
import { OGC_BASE, type OgcCollection } from "./documents.js";
import { itemsNotAcceptable, ogcAnswerType } from "./negotiate.js";

const methods = SourceLedgerService.method;

/** The list filter OGC API names `datetime` (Part 1 §7.15.4): sources whose period meets it. */
export const PERIOD_FILTER = "active_during";
export const DATETIME = "datetime";

/**
 * The list parameters an items request takes, `datetime` and `f` aside: the list's, but `offset`
 * (paging is by `next` links) and the period filter, which OGC names `datetime`.
 */
export function ogcItemsListParameters(environment: Environment): string[] {
  return listParametersOf(environment).filter((name) => name !== "offset" && name !== PERIOD_FILTER);
}

/** Where a violation of an items query points: OGC's names for the list's fields. */
const inItemsQuery: RequestFieldPointer = (v) => queryPointer(v.field === PERIOD_FILTER ? DATETIME : v.field);

export interface OgcItemsOptions {
  collection: OgcCollection;
  /** Calls the collection's environment's service through the shared interceptor chain. */
  call: InProcessCaller;
}

/**
 * The scheme and authority the request came to: OGC links are absolute. The Host is a checked
 * host[:port] (http/host-check.ts); an empty one names no authority, so links are path-absolute.
 */
export function baseUrlOf(request: FastifyRequest): string {
  const host = request.host as string | undefined;
  return host ? `${request.protocol}://${host}` : "";
}

/**
 * The items of one collection (OGC API – Features Part 1 §7.15–7.16, Part 4): a listing, one item,
 * create and delete, each translated to the same service call as its REST counterpart and run
 * through the same interceptors. Registered inside the REST plugin, whose body parsing, early
 * authentication and error answers it shares; a query the ledger finds wrong is 400 here (OGC's
 * status for an invalid parameter), a body 422 as in REST.
 */
export function registerOgcItems(app: FastifyInstance, { collection, call }: OgcItemsOptions): void {
  const items = `${OGC_BASE}/collections/${collection.id}/items`;
  const item = `${items}/:id(^.+$)`;
  const parameters = [...ogcItemsListParameters(collection.environment), DATETIME, FORMAT_PARAMETER];
  const asBadRequest = { invalidArgumentStatus: 400 };
  // A create's query problems alone are 400 too; with any in its body, 422 as in REST. Part 4
  // bodies are GeoJSON: a flat source object is REST's alone.
  const createOptions = { invalidQueryStatus: 400, shapes: "geojson" as const };

  app.get(items, { config: { rpcMethod: methods.listSources.name } }, async (request, reply) => {
    const query = new QueryReader(request.query as Record<string, string>, parameters);
    const type = ogcAnswerType(query, request.headers.accept);
    if (type === null) return sendProblem(reply.header("vary", "Accept"), itemsNotAcceptable());
    const message = readListRequest(query, collection.environment);
    message.activeDuring = query.range(DATETIME);
    // OGC: a limit above the largest the server offers is served at that largest (Part 1 §7.15.3).
    if (message.limit !== undefined && message.limit > MAX_LIST_LIMIT) message.limit = MAX_LIST_LIMIT;
    const records: SourceRecord[] = [];
    try {
      const answer = await callFromRoute(call, methods.listSources, message, request, reply, {
        violations: query.violations,
        records,
      });
      const base = baseUrlOf(request);
      const links: Link[] = [
        { href: `${base}${request.url}`, rel: "self", type, title: "This page" },
        { href: `${base}${OGC_BASE}/collections/${collection.id}`, rel: "collection", type: "application/json" },
      ];
      if (answer.nextPageToken !== "") {
        const next = `${base}${nextPageHref(request.url, answer.nextPageToken)}`;
        links.push({ href: next, rel: "next", type, title: "Next page" });
        reply.header("link", nextLinkHeader(next));
      }
      const timeStamp = new Date().toISOString();
      return reply
        .header("vary", "Accept")
        .code(200)
        .type(type)
        .send(renderFeatureCollection(records, links, { timeStamp }));
    } catch (error) {
      return sendError(reply, error, null, inItemsQuery, asBadRequest);
    }
  });

  app.get<{ Params: { id: string } }>(
    item,
    { config: { rpcMethod: methods.getSource.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, [FORMAT_PARAMETER]);
      const type = ogcAnswerType(query, request.headers.accept);
      if (type === null) return sendProblem(reply.header("vary", "Accept"), itemsNotAcceptable());
      const records: SourceRecord[] = [];
      try {
        const message = create(GetSourceRequestSchema, { id: request.params.id });
        await callFromRoute(call, methods.getSource, message, request, reply, {
          violations: query.violations,
          records,
        });
        const base = baseUrlOf(request);
        const links: Link[] = [
          { href: `${base}${request.url}`, rel: "self", type },
          { href: `${base}${OGC_BASE}/collections/${collection.id}`, rel: "collection", type: "application/json" },
        ];
        return reply.header("vary", "Accept").code(200).type(type).send(renderFeatureBytes(records[0], links));
      } catch (error) {
        return sendError(reply, error, null, undefined, asBadRequest);
      }
    },
  );

  // Part 4: a Feature, or a FeatureCollection (all or nothing); the created features as GeoJSON.
  app.post(items, { config: { rpcMethod: methods.createSources.name } }, (request, reply) =>
    answerCreate(
      call,
      request,
      reply,
      (records, shape) => {
        if (shape === "Feature" && records.length === 1) {
          const location = `${baseUrlOf(request)}${items}/${encodeURIComponent(records[0].id)}`;
          return reply
            .code(201)
            .header("location", location)
            .type(GEOJSON_CONTENT_TYPE)
            .send(renderFeatureBytes(records[0], [{ href: location, rel: "self", type: GEOJSON_CONTENT_TYPE }]));
        }
        return reply.code(201).type(GEOJSON_CONTENT_TYPE).send(renderFeatureCollection(records, []));
      },
      createOptions,
    ),
  );

  app.delete<{ Params: { id: string } }>(
    item,
    { config: { rpcMethod: methods.deleteSource.name } },
    async (request, reply) => {
      const query = new QueryReader(request.query as Record<string, string>, ["account_id"]);
      try {
        const message = create(DeleteSourceRequestSchema, {
          key: { case: "id", value: request.params.id },
          accountId: query.text("account_id"),
        });
        await callFromRoute(call, methods.deleteSource, message, request, reply, { violations: query.violations });
        return reply.code(204).send();
      } catch (error) {
        return sendError(reply, error, null, undefined, asBadRequest);
      }
    },
  );

  refuseOtherMethods(app, items, ["GET", "POST"]);
  refuseOtherMethods(app, item, ["GET", "DELETE"]);
}
