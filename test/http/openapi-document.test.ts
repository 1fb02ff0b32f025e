/**
 * The OpenAPI description (src/http/openapi) as a document: well-formed OpenAPI 3.0.3 (every $ref
 * resolves, every path parameter declared, operation ids unique, every schema compiles), and
 * generated from the shared descriptions: every list parameter of both environments with the
 * schema its filter's kind calls for, the rules' limits, the vocabularies, the scope table; and
 * what the renderers and problem.ts write fits the schemas given for it.
 */
import { Ajv } from "ajv";
import addFormatsModule from "ajv-formats";
import { describe, expect, it } from "vitest";
import { scopeForMethod } from "../../src/auth/scopes.js";
import { OGC_COLLECTIONS } from "../../src/http/ogc/documents.js";
import { buildOpenApiDocument, type OpenApiDocument } from "../../src/http/openapi/document.js";
import type { Operation, Parameter, Reference, Schema } from "../../src/http/openapi/types.js";
import { problem, sendProblem } from "../../src/http/problem.js";
import { listParametersOf } from "../../src/http/rest-query.js";
import { renderFeatureCollection, renderFeatureJson, renderRecordJson } from "../../src/http/rest-render.js";
import { DEFAULT_LIST_LIMIT, MAX_LIST_LIMIT, MAX_TEXT, MAX_YEAR, MIN_YEAR } from "../../src/ledger/rules.js";
import { type Environment, LIST_FILTERS, type ListFilter } from "../../src/model/list-query.js";
import type { SourceRecord } from "../../src/model/records.js";

// ajv-formats is CommonJS: its default export arrives as the module object under Node's ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const ASSETS = [{ name: "swagger-ui.0123456789abcdef.css", contentType: "text/css; charset=utf-8" }];
const doc = buildOpenApiDocument({ developmentIdentity: true, docsAssets: ASSETS });
const ENVIRONMENTS: readonly Environment[] = ["production", "sandbox"];
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;

type Json = Record<string, unknown>;

function operations(document: OpenApiDocument): { path: string; method: string; operation: Operation }[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = (item as Record<string, Operation | undefined>)[method];
      return operation ? [{ path, method, operation }] : [];
    }),
  );
}

/** The value a local reference (`#/a/b`) points at in `document`, or undefined. */
function resolvePointer(document: unknown, ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let at: unknown = document;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof at !== "object" || at === null || !(key in at)) return undefined;
    at = (at as Json)[key];
  }
  return at;
}

function deref<T>(value: T | Reference): T {
  if (typeof value === "object" && value !== null && "$ref" in value) {
    const target = resolvePointer(doc, value.$ref);
    if (target === undefined) throw new Error(`unresolved ${value.$ref}`);
    return target as T;
  }
  return value;
}

/** Every `$ref` anywhere in `value`, with where it was found. */
function refsIn(value: unknown, at = "#"): { ref: string; at: string }[] {
  if (Array.isArray(value)) return value.flatMap((item, i) => refsIn(item, `${at}/${i}`));
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([key, item]) =>
    key === "$ref" && typeof item === "string" ? [{ ref: item, at }] : refsIn(item, `${at}/${key}`),
  );
}

function ajvFor(document: OpenApiDocument): Ajv {
  const ajv = new Ajv({ strict: true, strictTypes: false, allErrors: true });
  addFormats(ajv);
  ajv.addFormat("binary", true);
  ajv.addKeyword("example");
  ajv.addKeyword("components");
  ajv.addSchema({ $id: "openapi.json", components: { schemas: document.components.schemas } });
  return ajv;
}

const ajv = ajvFor(doc);
function validate(schemaName: string, value: unknown): string | null {
  const check = ajv.getSchema(`openapi.json#/components/schemas/${schemaName}`);
  if (check === undefined) throw new Error(`no schema ${schemaName}`);
  return check(value) ? null : ajv.errorsText(check.errors);
}

function queryParameters(operation: Operation): Parameter[] {
  return (operation.parameters ?? []).map((p) => deref(p)).filter((p) => p.in === "query");
}

function operationAt(path: string, method: "get" | "post" | "delete"): Operation {
  const operation = doc.paths[path]?.[method];
  if (operation === undefined) throw new Error(`${method} ${path} is not described`);
  return operation;
}

const prefixOf = (env: Environment) => (env === "sandbox" ? "/sandbox" : "");

describe("an OpenAPI 3.0.3 document", () => {
  it("names the version and its parts", () => {
    expect(doc.openapi).toBe("3.0.3");
    expect(doc.info.title).toBe("Source Ledger");
    expect(doc.info.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(doc.servers).toEqual([{ url: "/", description: expect.any(String) }]);
    for (const path of Object.keys(doc.paths)) expect(path).toMatch(/^\//);
  });

  it("every $ref resolves, to a component of the kind its place calls for", () => {
    const refs = refsIn(doc);
    expect(refs.length).toBeGreaterThan(100);
    for (const { ref, at } of refs) {
      expect(resolvePointer(doc, ref), `${ref} at ${at}`).toBeDefined();
      // An operation's answer refers to a response; everything else to a schema.
      const kind = /\/responses\/\d{3}$/.test(at) ? "responses" : "schemas";
      expect(ref, at).toMatch(new RegExp(`^#/components/${kind}/[A-Za-z0-9]+$`));
    }
  });

  it("every component schema is referenced, and every problem response too", () => {
    const referenced = new Set(refsIn(doc).map((r) => r.ref));
    for (const name of Object.keys(doc.components.schemas)) {
      expect(referenced.has(`#/components/schemas/${name}`), name).toBe(true);
    }
    const unused = Object.keys(doc.components.responses).filter((n) => !referenced.has(`#/components/responses/${n}`));
    // 405 belongs to methods that are not operations (the Allow header names the operations).
    expect(unused).toEqual(["MethodNotAllowed"]);
  });

  it("operation ids are unique, and every operation has a summary, a tag it declares and a success answer", () => {
    const ids = operations(doc).map((o) => o.operation.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    const tags = new Set(doc.tags.map((t) => t.name));
    for (const { path, method, operation } of operations(doc)) {
      expect(operation.summary.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const tag of operation.tags) expect(tags.has(tag), `${method} ${path}: ${tag}`).toBe(true);
      const statuses = Object.keys(operation.responses);
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${method} ${path}`,
      ).toBe(true);
      for (const status of statuses) expect(status).toMatch(/^[1-5]\d\d$/);
      for (const response of Object.values(operation.responses))
        expect(deref(response).description.length).toBeGreaterThan(0);
    }
  });

  it("every path parameter is declared, required, and named in its path; no parameter twice", () => {
    for (const { path, method, operation } of operations(doc)) {
      const parameters = (operation.parameters ?? []).map((p) => deref(p));
      const inPath = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const declared = parameters.filter((p) => p.in === "path");
      expect(declared.map((p) => p.name).sort(), `${method} ${path}`).toEqual([...inPath].sort());
      for (const p of declared) expect(p.required, `${method} ${path} ${p.name}`).toBe(true);
      const keys = parameters.map((p) => `${p.in}:${p.name}`);
      expect(new Set(keys).size, `${method} ${path}`).toBe(keys.length);
      for (const p of parameters) {
        expect(p.schema, `${method} ${path} ${p.name}`).toBeDefined();
        if (p.style !== undefined) expect(p.in).toBe("query");
      }
    }
  });

  it("every schema compiles under Ajv's strict mode, and every object lists only required members it has", () => {
    for (const name of Object.keys(doc.components.schemas)) {
      expect(() => ajv.getSchema(`openapi.json#/components/schemas/${name}`), name).not.toThrow();
    }
    const objects = (value: unknown, at: string): void => {
      if (typeof value !== "object" || value === null) return;
      const schema = value as Schema;
      if (schema.properties && schema.required) {
        for (const name of schema.required)
          expect(Object.keys(schema.properties), `${at} requires ${name}`).toContain(name);
      }
      if (schema.nullable) expect(schema.type, `${at}: nullable needs a type (OpenAPI 3.0)`).toBeDefined();
      if (schema.nullable && schema.enum)
        expect(schema.enum, `${at}: a nullable enum lists null (3.0.3)`).toContain(null);
      for (const [key, item] of Object.entries(value)) objects(item, `${at}/${key}`);
    };
    objects(doc, "#");
  });

  it("security: a bearer scheme and client credentials; every operation public or needing its method's scope", () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
    expect(doc.components.securitySchemes.oauth2).toMatchObject({
      type: "oauth2",
      flows: { clientCredentials: { tokenUrl: "/oauth/token" } },
    });
    const publicPaths = new Set([
      "/ogc",
      "/ogc/conformance",
      "/ogc/collections",
      "/ogc/collections/{collectionId}",
      "/openapi.json",
      "/docs",
      "/docs/assets/{file}",
      "/healthz",
      "/readyz",
      "/metrics",
      "/oauth/token",
      "/.well-known/jwks.json",
    ]);
    for (const { path, method, operation } of operations(doc)) {
      if (publicPaths.has(path)) {
        expect(operation.security, `${method} ${path}`).toEqual([]);
        continue;
      }
      const [bearer, oauth2] = operation.security ?? [];
      expect(bearer, `${method} ${path}`).toEqual({ bearerAuth: [] });
      const scope = oauth2?.oauth2?.[0];
      expect(["read:sources", "write:sources", "delete:sources"]).toContain(scope);
      expect(Object.keys(operation.responses), `${method} ${path}`).toEqual(expect.arrayContaining(["401", "403"]));
    }
    expect(operationAt("/sources", "post").security?.[1]).toEqual({ oauth2: [scopeForMethod("CreateSources")] });
    expect(operationAt("/sandbox/sources/{id}", "delete").security?.[1]).toEqual({
      oauth2: [scopeForMethod("DeleteSource")],
    });
  });

  it("describes the development identity provider only when it runs", () => {
    expect(doc.paths["/oauth/token"]?.post?.description).toContain("AUTH_ISSUER");
    expect(doc.paths["/.well-known/jwks.json"]?.get?.description).toContain("AUTH_ISSUER");
    const without = buildOpenApiDocument({ developmentIdentity: false, docsAssets: ASSETS });
    expect(without.paths["/oauth/token"]).toBeUndefined();
    expect(without.paths["/.well-known/jwks.json"]).toBeUndefined();
    expect(Object.keys(without.paths)).toEqual(
      Object.keys(doc.paths).filter((p) => !p.startsWith("/oauth") && !p.startsWith("/.well")),
    );
  });

  it("names the docs page's files as the values of its assets path", () => {
    const [file] = (operationAt("/docs/assets/{file}", "get").parameters ?? []).map((p) => deref(p));
    expect(file.schema).toEqual({ type: "string", enum: ASSETS.map((a) => a.name) });
    expect(Object.keys(deref(operationAt("/docs/assets/{file}", "get").responses["200"]).content ?? {})).toEqual([
      "text/css; charset=utf-8",
    ]);
  });
});

/** What each kind of list filter must look like as a query parameter (docs/api.md §4.5). */
function expectFilterParameter(parameter: Parameter, filter: ListFilter): void {
  const schema = parameter.schema as Schema;
  const names = filter.vocabulary?.names;
  switch (filter.kind) {
    case "text":
      expect(schema).toMatchObject({ type: "string", minLength: 1, maxLength: MAX_TEXT });
      break;
    case "year":
      expect(schema).toMatchObject({ type: "integer", minimum: MIN_YEAR, maximum: MAX_YEAR });
      break;
    case "bool":
      expect(schema).toMatchObject({ type: "boolean" });
      break;
    case "enum":
      expect(schema).toMatchObject({ type: "string", enum: names });
      break;
    case "anyOf":
      expect(schema).toMatchObject({ type: "array", items: { type: "string", enum: names } });
      expect(parameter).toMatchObject({ style: "form", explode: true });
      break;
    case "instant":
      expect(schema).toMatchObject({ type: "string", format: "date-time" });
      break;
    case "box":
      expect(schema).toMatchObject({ type: "array", items: { type: "number" }, minItems: 4, maxItems: 4 });
      expect(parameter).toMatchObject({ style: "form", explode: false });
      break;
    default:
      // A kind added to ListFilterKind: the document describes it (or fails at start); say here what it must be.
      expect(String(filter.kind)).toBe("range");
      expect(schema).toMatchObject({ type: "string" });
      expect(parameter.description).toContain("start/end");
  }
  expect(parameter.description ?? "", filter.name).not.toBe("");
}

describe.each(ENVIRONMENTS)("the list parameters of %s, from listParametersOf and LIST_FILTERS", (env) => {
  const list = operationAt(`${prefixOf(env)}/sources`, "get");

  it("GET …/sources takes exactly listParametersOf's names and f, each described", () => {
    const parameters = queryParameters(list);
    expect(parameters.map((p) => p.name)).toEqual([...listParametersOf(env), "f"]);
    for (const p of parameters) expect(p.description ?? "", p.name).not.toBe("");
    expect(parameters.find((p) => p.name === "f")?.schema).toMatchObject({ enum: ["json", "geojson"] });
  });

  it("each filter has the schema of its kind, its vocabulary, its limits", () => {
    const byName = new Map(queryParameters(list).map((p) => [p.name, p]));
    const filters = LIST_FILTERS.filter((f) => f.environments.includes(env));
    expect(filters.length).toBeGreaterThan(10);
    for (const filter of filters) {
      const parameter = byName.get(filter.name);
      expect(parameter, filter.name).toBeDefined();
      expectFilterParameter(parameter as Parameter, filter);
    }
    // A filter of the other environment only is not offered here.
    for (const filter of LIST_FILTERS.filter((f) => !f.environments.includes(env))) {
      expect(byName.has(filter.name), filter.name).toBe(false);
    }
  });

  it("limit, offset, page_token, account_id and as_of: the rules' limits and types", () => {
    const byName = new Map(queryParameters(list).map((p) => [p.name, p.schema as Schema]));
    expect(byName.get("limit")).toMatchObject({
      type: "integer",
      minimum: 1,
      maximum: MAX_LIST_LIMIT,
      default: DEFAULT_LIST_LIMIT,
    });
    expect(byName.get("offset")).toMatchObject({ type: "integer", minimum: 0, default: 0 });
    expect(byName.get("page_token")).toMatchObject({ type: "string" });
    expect(byName.get("account_id")).toMatchObject({ type: "string", minLength: 1, maxLength: MAX_TEXT });
    expect(byName.get("as_of")).toMatchObject({ type: "string", format: "date-time" });
    for (const path of ["/sources/{id}/history", "/sources/{id}/conflicts"]) {
      const limit = queryParameters(operationAt(`${prefixOf(env)}${path}`, "get")).find((p) => p.name === "limit");
      expect(limit?.schema).toMatchObject({ minimum: 1, maximum: MAX_LIST_LIMIT, default: DEFAULT_LIST_LIMIT });
    }
  });

  it("the search body takes the area and every list parameter as a member, in its JSON type, nothing else", () => {
    const body = deref(
      operationAt(`${prefixOf(env)}/sources/search`, "post").requestBody?.content["application/json"]?.schema ?? {
        $ref: "#/none",
      },
    );
    const schema = deref(body as Schema | Reference) as Schema;
    expect(Object.keys(schema.properties ?? {})).toEqual(["intersects", ...listParametersOf(env)]);
    expect(schema.required).toEqual(["intersects"]);
    expect(schema.additionalProperties).toBe(false);
    const member = (name: string) => schema.properties?.[name] as Schema;
    for (const filter of LIST_FILTERS.filter((f) => f.environments.includes(env))) {
      if (filter.kind === "anyOf") expect(member(filter.name).oneOf).toHaveLength(2);
      if (filter.kind === "box") expect(member(filter.name)).toMatchObject({ type: "array", minItems: 4, maxItems: 4 });
      if (filter.kind === "year") expect(member(filter.name)).toMatchObject({ type: "integer", minimum: MIN_YEAR });
    }
    expect(member("limit")).toMatchObject({ type: "integer", maximum: MAX_LIST_LIMIT });
  });

  it("the OGC items take the list's parameters but offset, the period as datetime, and f", () => {
    const collection = OGC_COLLECTIONS.find((c) => c.environment === env);
    const items = operationAt(`/ogc/collections/${collection?.id}/items`, "get");
    const names = queryParameters(items).map((p) => p.name);
    const period = LIST_FILTERS.filter((f) => String(f.kind) === "range").map((f) => f.name);
    expect(names).toEqual([
      ...listParametersOf(env).filter((n) => n !== "offset" && !period.includes(n)),
      "datetime",
      "f",
    ]);
    const limit = queryParameters(items).find((p) => p.name === "limit");
    // OGC: a larger limit is served at the largest (Part 1 §7.15.3), so none is refused.
    expect(limit?.schema).toMatchObject({ type: "integer", minimum: 1, default: DEFAULT_LIST_LIMIT });
    expect(limit?.description).toContain(String(MAX_LIST_LIMIT));
  });
});

describe("the schemas fit what the service writes", () => {
  const record: SourceRecord = {
    id: "src_01J9Z3K8M4V7Q2X5R6T8W0Y1AB",
    accountId: "acct-1",
    altId: "north-40",
    methodology: "VM0042",
    tags: ["a"],
    stewardId: null,
    projectId: "prj-7",
    outcomeReportingYear: 2024,
    sourceType: "FIELD",
    attributeType: ["CARBON_REMOVAL"],
    geometrySource: null,
    geometry: {
      type: "Polygon",
      coordinates: [
        [
          [0, 0],
          [1, 0],
          [1, 1],
          [0, 1],
          [0, 0],
        ],
      ],
    },
    startAt: Date.UTC(2024, 0, 1),
    endAt: Date.UTC(2025, 0, 1),
    createdBy: "Client One",
    updatedBy: "Client One",
    createdAt: Date.UTC(2025, 2, 4, 10, 15, 30, 123),
    updatedAt: Date.UTC(2025, 2, 4, 10, 15, 30, 123),
    conflict: false,
    unepOverlap: {
      dataset: "WDPA",
      overlaps: true,
      areaM2: 12.5,
      fraction: 0.25,
      areas: [{ id: "1", name: "Park", designation: "National Park", iucnCategory: "II", areaM2: 12.5 }],
    },
  } as SourceRecord;

  it("a record, as rest-render writes it, and with every optional value absent", () => {
    expect(validate("SourceRecord", JSON.parse(renderRecordJson(record)))).toBeNull();
    const bare = {
      ...record,
      methodology: null,
      tags: [],
      projectId: null,
      outcomeReportingYear: null,
      sourceType: null,
      attributeType: [],
      unepOverlap: null,
    };
    expect(validate("SourceRecord", JSON.parse(renderRecordJson(bare as SourceRecord)))).toBeNull();
  });

  it("a Feature and a FeatureCollection, as rest-render writes them", () => {
    expect(validate("SourceFeature", JSON.parse(renderFeatureJson(record)))).toBeNull();
    const links = [{ href: "/x", rel: "self", type: "application/geo+json" }];
    expect(validate("SourceFeature", JSON.parse(renderFeatureJson(record, links)))).toBeNull();
    const page = JSON.parse(
      renderFeatureCollection([record], links, { timeStamp: "2025-01-01T00:00:00.000Z" }).toString(),
    );
    expect(validate("SourceFeatureCollection", page)).toBeNull();
  });

  it("refuses what drifts: a missing key, an extra key, a name outside the vocabulary", () => {
    const json = JSON.parse(renderRecordJson(record)) as Json;
    const { conflict: _, ...missing } = json;
    expect(validate("SourceRecord", missing)).toMatch(/conflict/);
    expect(validate("SourceRecord", { ...json, extra: 1 })).toMatch(/additional/);
    expect(validate("SourceRecord", { ...json, source_type: "field" })).toMatch(/allowed values/);
    expect(validate("SourceRecord", { ...json, created_at: "2025-03-04T10:15:30Z" })).toMatch(/pattern/);
  });

  it("problem details, as sendProblem writes them", () => {
    let sent: unknown;
    const reply = {
      request: { id: "req-1" },
      code: () => reply,
      type: () => reply,
      send: (body: unknown) => {
        sent = body;
        return reply;
      },
    };
    sendProblem(reply, problem(422, "invalid_argument", "/a: bad", [{ pointer: "/a", detail: "bad" }]));
    expect(validate("Problem", sent)).toBeNull();
    sendProblem(reply, problem(405, "unimplemented", "method not allowed; allowed: GET"));
    expect(validate("Problem", sent)).toBeNull();
    expect(validate("Problem", { ...(sent as Json), code: "teapot" })).toMatch(/allowed values/);
  });
});
