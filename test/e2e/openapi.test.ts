/**
 * GET /openapi.json and GET /docs against the real server (docs/api.md §12): the document describes
 * exactly the routes Fastify registered (the methods it leaves out answer 405 with an Allow that
 * names the documented ones), every operation accepts exactly the query parameters it documents,
 * and the real answers of every operation, successes and the errors that can be provoked, fit the
 * schema the document gives for their path, method, status and media type (Ajv). /docs renders it
 * from local files only. Neither needs a token.
 */
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenApiDocument } from "../../src/http/openapi/document.js";
import type { Response as OpenApiResponse, Operation, Parameter, Reference } from "../../src/http/openapi/types.js";
import { startTestServer, type TestServer } from "../support/server.js";
import { collection, feature, flat, type Json, polygon, unique } from "./rest-support.js";

// ajv-formats is CommonJS: its default export arrives as the module object under Node's ESM.
const addFormats = ((addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ??
  addFormatsModule) as unknown as (ajv: Ajv) => Ajv;

const OPENAPI_TYPE = "application/vnd.oai.openapi+json;version=3.0";
const METHODS = ["get", "post", "delete", "put", "patch"] as const;

let server: TestServer;
/** A second server running the development identity provider, with a read rate limit to reach 429. */
let dev: TestServer;
let doc: OpenApiDocument;
let devDoc: OpenApiDocument;

beforeAll(async () => {
  server = await startTestServer();
  dev = await startTestServer({ AUTH_ISSUER: "", AUTH_JWKS_URL: "", RATE_LIMIT_READS_PER_S: "1" });
  doc = (await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
  devDoc = (await (await fetch(`${dev.baseUrl}/openapi.json`)).json()) as OpenApiDocument;
});

afterAll(async () => {
  await server?.close();
  await dev?.close();
});

// ---------------------------------------------------------------------------------------------
// The document as a validator of answers

/** Per document: Ajv with the document's schemas under `openapi.json`, and its compiled validators. */
const validators = new WeakMap<OpenApiDocument, { ajv: Ajv; compiled: Map<string, ValidateFunction> }>();

function validatorOf(document: OpenApiDocument, schema: unknown): ValidateFunction {
  let entry = validators.get(document);
  if (entry === undefined) {
    const ajv = new Ajv({ strict: true, strictTypes: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat("binary", true);
    ajv.addKeyword("example");
    ajv.addKeyword("components");
    ajv.addSchema({ $id: "openapi.json", components: { schemas: document.components.schemas } });
    entry = { ajv, compiled: new Map() };
    validators.set(document, entry);
  }
  // The operation's own schema refers to components as `#/components/…`: of the document, not of itself.
  const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
  let check = entry.compiled.get(text);
  if (check === undefined) {
    check = entry.ajv.compile(JSON.parse(text) as object);
    entry.compiled.set(text, check);
  }
  return check;
}

function deref<T>(document: OpenApiDocument, value: T | Reference): T {
  if (typeof value !== "object" || value === null || !("$ref" in value)) return value;
  const [, kind, name] = value.$ref.split("/").slice(1);
  const components = document.components as unknown as Record<string, Record<string, T>>;
  const target = components[kind]?.[name];
  if (target === undefined) throw new Error(`unresolved ${value.$ref}`);
  return target;
}

const baseType = (mediaType: string) => mediaType.split(";")[0].trim().toLowerCase();
const isJson = (mediaType: string) => {
  const type = baseType(mediaType);
  return type === "application/json" || type.endsWith("+json");
};

/** What was checked against the document: `<doc> <METHOD> <path> <status>`. */
const checked = new Set<string>();

/**
 * Asserts that `res` is an answer `document` gives for `method` on `docPath`: its status is
 * documented, its media type is one the response lists (or it has no body when none is listed),
 * and its body fits that media type's schema. Returns the parsed body (or the text).
 */
async function expectDocumented(
  res: Response,
  method: string,
  docPath: string,
  document: OpenApiDocument = doc,
): Promise<unknown> {
  const text = await res.text();
  const where = `${method} ${docPath} → ${res.status} ${text.slice(0, 300)}`;
  const operation = (document.paths[docPath] as Record<string, Operation> | undefined)?.[method.toLowerCase()];
  expect(operation, `${method} ${docPath} is not documented`).toBeDefined();
  const listed = operation?.responses[String(res.status)];
  expect(listed, `undocumented status: ${where}`).toBeDefined();
  const response = deref(document, listed as OpenApiResponse | Reference);
  checked.add(`${document === doc ? "main" : "dev"} ${method.toUpperCase()} ${docPath} ${res.status}`);
  return checkBody(document, response, res, text, where);
}

function checkBody(document: OpenApiDocument, response: OpenApiResponse, res: Response, text: string, where: string) {
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const described = deref(document, header);
    if (described.required === true) expect(res.headers.get(name), `${name}: ${where}`).toBeTruthy();
  }
  const contentType = res.headers.get("content-type");
  if (response.content === undefined) {
    expect(text, where).toBe("");
    return text;
  }
  expect(contentType, where).not.toBeNull();
  const type = baseType(contentType as string);
  const key = Object.keys(response.content).find((mediaType) => baseType(mediaType) === type);
  expect(key, `media type ${contentType} not documented: ${where}`).toBeDefined();
  const schema = response.content[key as string].schema;
  if (!isJson(type)) {
    expect(text.length, where).toBeGreaterThan(0);
    return text;
  }
  const body: unknown = JSON.parse(text);
  const check = validatorOf(document, schema);
  expect(check(body), `${where}\n${JSON.stringify(check.errors, null, 1)}`).toBe(true);
  return body;
}

// ---------------------------------------------------------------------------------------------
// Routes

/** The routes Fastify registered, from printRoutes' tree: each full path and its methods. */
function registeredRoutes(app: FastifyInstance): { path: string; methods: string[] }[] {
  const routes: { path: string; methods: string[] }[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    if (line.trim() === "") continue;
    const match = /^((?:│ {3}| {4})*)(?:├── |└── )(.+?)(?: \(([^)]*)\))?$/.exec(line);
    if (match === null) throw new Error(`unexpected printRoutes line: ${line}`);
    const depth = match[1].length / 4;
    stack.length = depth;
    stack.push(match[2]);
    if (match[3] !== undefined) routes.push({ path: stack.join(""), methods: match[3].split(", ") });
  }
  return routes;
}

/**
 * Connect, gRPC and gRPC-Web: the proto describes them (the API's, and gRPC's health and
 * reflection, docs/api.md §9.9). HEAD and OPTIONS: Fastify's own.
 */
const isRpc = (path: string) => path.startsWith("/sourceledger.v2.") || path.startsWith("/grpc.");
const OWN_METHODS = new Set(["HEAD", "OPTIONS"]);

/** Whether a route path (`/sources/:id(^.+$)`) is the documented template (`/sources/{id}`). */
function routeMatches(document: OpenApiDocument, routePath: string, template: string): boolean {
  const route = routePath.split("/");
  const doc = template.split("/");
  if (route.length !== doc.length) return false;
  return route.every((segment, i) => {
    const documented = doc[i];
    const parameter = /^\{(.+)\}$/.exec(documented)?.[1];
    if (parameter === undefined) return segment === documented;
    if (segment.startsWith(":")) return true;
    // A literal route under a parameter of the document (`/ogc/collections/sources`): one of its values.
    const declared = Object.values(document.paths[template] ?? {})
      .filter((o): o is Operation => typeof o === "object" && "responses" in o)
      .flatMap((o) => (o.parameters ?? []).map((p) => deref(document, p)))
      .find((p) => p.in === "path" && p.name === parameter);
    const values = (declared?.schema as { enum?: unknown[] } | undefined)?.enum;
    return values?.includes(segment) ?? false;
  });
}

function documentedMethods(document: OpenApiDocument, template: string): string[] {
  const item = document.paths[template] as Record<string, unknown>;
  return METHODS.filter((m) => item[m] !== undefined).map((m) => m.toUpperCase());
}

/** A URL for a documented template: each parameter its first declared value, else `x`. */
function concrete(document: OpenApiDocument, template: string): string {
  return template.replace(/\{([^}]+)\}/g, (_all, name: string) => {
    const operations = Object.values(document.paths[template] ?? {}).filter(
      (o): o is Operation => typeof o === "object" && "responses" in o,
    );
    const parameter = operations.flatMap((o) => o.parameters ?? []).map((p) => deref(document, p));
    const values = (parameter.find((p) => p.name === name)?.schema as { enum?: string[] } | undefined)?.enum;
    return values?.[0] ?? "src_01J9Z3K8M4V7Q2X5R6T8W0Y1AB";
  });
}

function expectRoutesDocumented(target: TestServer, document: OpenApiDocument, name: string) {
  const routes = registeredRoutes(target.built.app).filter((r) => !isRpc(r.path));
  expect(routes.length, name).toBeGreaterThan(20);
  const templates = Object.keys(document.paths);
  const undocumentedMethods: { template: string; method: string }[] = [];
  for (const route of routes) {
    const template = templates.find((t) => routeMatches(document, route.path, t));
    expect(template, `${name}: route ${route.path} is not documented`).toBeDefined();
    for (const method of route.methods.filter((m) => !OWN_METHODS.has(m))) {
      if (!documentedMethods(document, template as string).includes(method)) {
        undocumentedMethods.push({ template: template as string, method });
      }
    }
  }
  for (const template of templates) {
    for (const method of documentedMethods(document, template)) {
      const served = routes.some((r) => routeMatches(document, r.path, template) && r.methods.includes(method));
      expect(served, `${name}: ${method} ${template} is documented but not served`).toBe(true);
    }
  }
  return undocumentedMethods;
}

// ---------------------------------------------------------------------------------------------

describe("the document and the routes", () => {
  it("every route Fastify registered is documented, and every documented operation is served", () => {
    expectRoutesDocumented(server, doc, "main");
    expectRoutesDocumented(dev, devDoc, "dev");
    expect(doc.paths["/oauth/token"]).toBeUndefined();
    expect(devDoc.paths["/oauth/token"]?.post).toBeDefined();
    expect(devDoc.paths["/.well-known/jwks.json"]?.get).toBeDefined();
  });

  it("a method a path does not document answers 405, with an Allow that names the documented ones", async () => {
    const token = await server.userToken(unique("acct-405"));
    const undocumented = expectRoutesDocumented(server, doc, "main");
    expect(undocumented.length).toBeGreaterThanOrEqual(20);
    for (const { template, method } of undocumented) {
      const res = await server.request(method, concrete(doc, template), { token });
      const text = await res.text();
      expect(res.status, `${method} ${template}: ${text}`).toBe(405);
      expect(res.headers.get("allow")?.split(", ").sort(), `${method} ${template}`).toEqual(
        documentedMethods(doc, template).sort(),
      );
      const response = doc.components.responses.MethodNotAllowed;
      checkBody(doc, response, res, text, `${method} ${template}`);
    }
  });

  it("every operation takes exactly the query parameters it documents", async () => {
    const token = await server.userToken(unique("acct-params"));
    let operations = 0;
    for (const [template, item] of Object.entries(doc.paths)) {
      for (const method of METHODS) {
        const operation = (item as Record<string, Operation | undefined>)[method];
        const documented = (operation?.parameters ?? [])
          .map((p) => deref(doc, p) as Parameter)
          .filter((p) => p.in === "query")
          .map((p) => p.name);
        if (operation === undefined || documented.length === 0) continue;
        const body = method === "post" ? { json: {} } : {};
        const res = await server.request(method.toUpperCase(), `${concrete(doc, template)}?zz_unknown=1`, {
          token,
          ...body,
        });
        const problem = (await expectDocumented(res, method, template)) as {
          errors: { pointer: string; detail: string }[];
        };
        const refusal = problem.errors.find((e) => e.pointer === "/query/zz_unknown");
        expect(refusal, `${method} ${template}: ${JSON.stringify(problem)}`).toBeDefined();
        const allowed = (refusal?.detail.split("allowed here: ")[1] ?? "").split(", ");
        expect(allowed.sort(), `${method} ${template}`).toEqual([...documented].sort());
        operations += 1;
      }
    }
    expect(operations).toBeGreaterThanOrEqual(20);
  });
});

// ---------------------------------------------------------------------------------------------
// Real answers

/** Three overlapping squares near (120°, −30°): conflicts in production, within and across accounts. */
const square = (dx: number) => polygon(120 + dx, -30, 0.01);

describe.each(["production", "sandbox"] as const)("REST answers of %s fit the document", (env) => {
  const prefix = env === "sandbox" ? "/sandbox" : "";
  const at = (rest: string) => `${prefix}/sources${rest}`;
  let token: string;
  let other: string;
  let readOnly: string;
  let ids: string[];

  beforeAll(async () => {
    const account = unique("acct-doc");
    token = await server.userToken(account);
    other = await server.userToken(unique("acct-doc-other"));
    readOnly = await server.userToken(account, { scope: "read:sources" });
    const first = await expectDocumented(
      await server.request("POST", at(""), {
        token,
        json: collection([feature(unique("fc"), { source_type: "FIELD", tags: ["t"] }, square(0))], {
          methodology: "VM0042",
        }),
      }),
      "POST",
      at(""),
    );
    const second = await expectDocumented(
      await server.request("POST", at(""), {
        token,
        json: flat(unique("flat"), { geometry: square(0.005), attribute_type: ["BIODIVERSITY"] }),
      }),
      "POST",
      at(""),
    );
    // Another account's overlapping source: the counterpart is then an opaque ref.
    await expectDocumented(
      await server.request("POST", at(""), { token: other, json: feature(unique("other"), {}, square(0.002)) }),
      "POST",
      at(""),
    );
    ids = [...(first as Json[]), ...(second as Json[])].map((r) => r.id as string);
  });

  it("lists and searches, as JSON and GeoJSON, with a next link", async () => {
    const page = await server.request("GET", at("?limit=1"), { token });
    expect(page.headers.get("link")).toMatch(/rel="next"/);
    expect(await expectDocumented(page, "GET", at(""))).toHaveLength(1);
    const geo = (await expectDocumented(
      await server.request("GET", at("?f=geojson&limit=1&source_type=FIELD&attribute_type=CARBON_REMOVAL"), { token }),
      "GET",
      at(""),
    )) as Json;
    expect(geo.type).toBe("FeatureCollection");
    const area = { type: "Polygon", coordinates: square(0).coordinates };
    const search = await server.request("POST", at("/search"), { token, json: { intersects: area, limit: 1 } });
    expect(search.headers.get("link")).toMatch(/rel="next"/);
    expect(await expectDocumented(search, "POST", at("/search"))).toHaveLength(1);
    // Inside the first two squares, not the third (another account's, which this caller never sees).
    const point = { type: "Point", coordinates: [120.007, -29.995] };
    const geoSearch = await server.request("POST", at("/search"), {
      token,
      json: { intersects: point, bbox: [119, -31, 121, -29] },
      headers: { accept: "application/geo+json" },
    });
    expect(((await expectDocumented(geoSearch, "POST", at("/search"))) as Json).numberReturned).toBe(2);
  });

  it("gets one record as JSON and as a Feature; its history and conflicts", async () => {
    await expectDocumented(await server.request("GET", at(`/${ids[0]}`), { token }), "GET", at("/{id}"));
    const feature = await server.request("GET", at(`/${ids[0]}`), {
      token,
      headers: { accept: "application/geo+json" },
    });
    expect(((await expectDocumented(feature, "GET", at("/{id}"))) as Json).type).toBe("Feature");
    const events = (await expectDocumented(
      await server.request("GET", at(`/${ids[0]}/history`), { token }),
      "GET",
      at("/{id}/history"),
    )) as Json[];
    const conflicts = (await expectDocumented(
      await server.request("GET", at(`/${ids[0]}/conflicts`), { token }),
      "GET",
      at("/{id}/conflicts"),
    )) as Json[];
    if (env === "production") {
      // Own account ({id, alt_id}) and another's ({ref}); conflict_set events with their measures.
      expect(events.map((e) => e.type)).toEqual(["created", "conflict_set", "conflict_set"]);
      expect(conflicts.map((c) => Object.keys(c.counterpart as Json).sort())).toEqual([["alt_id", "id"], ["ref"]]);
      const asAdmin = (await expectDocumented(
        await server.request("GET", at(`/${ids[0]}/conflicts`), { token: await server.adminToken() }),
        "GET",
        at("/{id}/conflicts"),
      )) as Json[];
      expect(Object.keys(asAdmin[0].counterpart as Json).sort()).toEqual(["account_id", "alt_id", "id"]);
      const past = await server.request("GET", at(`/${ids[0]}?as_of=${new Date().toISOString()}`), { token });
      await expectDocumented(past, "GET", at("/{id}"));
    } else {
      expect(events.map((e) => e.type)).toEqual(["created"]);
      expect(conflicts).toEqual([]);
    }
  });

  it("deletes by id and by alt_id (204, no body), then 404", async () => {
    const [made] = (await expectDocumented(
      await server.request("POST", at(""), { token, json: flat(unique("gone")) }),
      "POST",
      at(""),
    )) as Json[];
    await expectDocumented(await server.request("DELETE", at(`/${made.id}`), { token }), "DELETE", at("/{id}"));
    await expectDocumented(await server.request("DELETE", at(`/${made.id}`), { token }), "DELETE", at("/{id}"));
    if (env === "production") {
      const history = (await expectDocumented(
        await server.request("GET", at(`/${made.id}/history`), { token }),
        "GET",
        at("/{id}/history"),
      )) as Json[];
      expect(history.map((e) => e.type)).toEqual(["created", "deleted"]);
    }
    const altId = unique("gone-alt");
    await expectDocumented(await server.request("POST", at(""), { token, json: flat(altId) }), "POST", at(""));
    const byAlt = `?alt_id=${encodeURIComponent(altId)}`;
    await expectDocumented(await server.request("DELETE", at(byAlt), { token }), "DELETE", at(""));
    await expectDocumented(await server.request("DELETE", at(byAlt), { token }), "DELETE", at(""));
  });

  it("the error answers each operation documents: 401, 403, 404, 406, 409, 413, 415, 422", async () => {
    const unknown = at("/src_01J9Z3K8M4V7Q2X5R6T8W0Y1AB");
    const cases: [string, string, string, Parameters<TestServer["request"]>[2]][] = [
      ["GET", at(""), at(""), {}],
      ["POST", at(""), at(""), { json: flat(unique("no-token")) }],
      ["POST", at("/search"), at("/search"), { json: {} }],
      ["GET", at(`/${ids[0]}`), at("/{id}"), {}],
      ["DELETE", at(`/${ids[0]}`), at("/{id}"), {}],
      ["DELETE", at("?alt_id=x"), at(""), {}],
      ["GET", at(`/${ids[0]}/history`), at("/{id}/history"), {}],
      ["GET", at(`/${ids[0]}/conflicts`), at("/{id}/conflicts"), {}],
    ];
    for (const [method, path, template, options] of cases) {
      const res = await server.request(method, path, options);
      expect(res.status).toBe(401);
      await expectDocumented(res, method, template);
    }
    const cannot = await server.request("POST", at(""), { token: readOnly, json: flat(unique("read-only")) });
    expect(cannot.status).toBe(403);
    await expectDocumented(cannot, "POST", at(""));
    await expectDocumented(
      await server.request("DELETE", at(`/${ids[0]}`), { token: readOnly }),
      "DELETE",
      at("/{id}"),
    );
    for (const [method, path, template] of [
      ["GET", unknown, at("/{id}")],
      ["GET", `${unknown}/history`, at("/{id}/history")],
      ["GET", `${unknown}/conflicts`, at("/{id}/conflicts")],
    ]) {
      const res = await server.request(method, path, { token });
      expect(res.status).toBe(404);
      await expectDocumented(res, method, template);
    }
    const html = { token, headers: { accept: "text/html" } };
    for (const [method, path, template, json] of [
      ["GET", at(""), at(""), undefined],
      ["GET", at(`/${ids[0]}`), at("/{id}"), undefined],
      ["POST", at("/search"), at("/search"), { intersects: { type: "Point", coordinates: [0, 0] } }],
    ] as const) {
      const res = await server.request(method, path, { ...html, json });
      expect(res.status).toBe(406);
      await expectDocumented(res, method, template);
    }
    const again = await server.request("GET", at(`/${ids[0]}`), { token });
    const altId = ((await again.json()) as Json).alt_id as string;
    const taken = await server.request("POST", at(""), { token, json: flat(altId) });
    expect(taken.status).toBe(409);
    await expectDocumented(taken, "POST", at(""));
    for (const [method, path, template] of [
      ["POST", at(""), at("")],
      ["POST", at("/search"), at("/search")],
    ]) {
      const plain = await server.request(method, path, {
        token,
        body: "{}",
        headers: { "content-type": "text/plain" },
      });
      expect(plain.status).toBe(415);
      await expectDocumented(plain, method, template);
    }
    const invalid: [string, string, string, unknown][] = [
      ["GET", at("?limit=0"), at(""), undefined],
      ["POST", at(""), at(""), flat("bowtie", { end_at: "2023-01-01T00:00:00Z" })],
      ["POST", at("/search"), at("/search"), { intersects: { type: "LineString", coordinates: [] } }],
      ["GET", at(`/${ids[0]}?as_of=yesterday`), at("/{id}"), undefined],
      ["DELETE", at(`/${ids[0]}?account_id=someone`), at("/{id}"), undefined],
      ["DELETE", at(""), at(""), undefined],
      ["GET", at(`/${ids[0]}/history?limit=0`), at("/{id}/history"), undefined],
      ["GET", at(`/${ids[0]}/conflicts?limit=5000`), at("/{id}/conflicts"), undefined],
    ];
    for (const [method, path, template, json] of invalid) {
      const res = await server.request(method, path, { token, json });
      expect(res.status, `${method} ${path}`).toBe(422);
      await expectDocumented(res, method, template);
    }
  });

  it("a body over 10 MiB is 413", async () => {
    for (const path of ["", "/search"]) {
      const res = await server.request("POST", at(path), {
        token,
        body: `{"pad":"${"x".repeat(10 * 1024 * 1024)}"}`,
        headers: { "content-type": "application/json" },
      });
      expect(res.status).toBe(413);
      await expectDocumented(res, "POST", at(path));
    }
  });
});

describe.each(["sources", "sandbox-sources"])("OGC answers of %s fit the document", (id) => {
  const items = `/ogc/collections/${id}/items`;
  const item = `${items}/{featureId}`;
  let token: string;
  let featureIds: string[];

  beforeAll(async () => {
    token = await server.userToken(unique("acct-ogc"));
    const one = await server.request("POST", items, {
      token,
      json: feature(unique("ogc-one")),
      headers: { "content-type": "application/geo+json" },
    });
    expect(one.headers.get("location")).toMatch(new RegExp(`${items}/`));
    const created = (await expectDocumented(one, "POST", items)) as Json;
    const many = (await expectDocumented(
      await server.request("POST", items, { token, json: collection([feature(unique("a")), feature(unique("b"))]) }),
      "POST",
      items,
    )) as Json;
    featureIds = [created.id as string, ...(many.features as Json[]).map((f) => f.id as string)];
  });

  it("the documents: landing page, conformance, collections, the collection; 400, 404 and 406", async () => {
    for (const [path, template] of [
      ["/ogc", "/ogc"],
      ["/ogc/conformance", "/ogc/conformance"],
      ["/ogc/collections", "/ogc/collections"],
      [`/ogc/collections/${id}`, "/ogc/collections/{collectionId}"],
    ]) {
      await expectDocumented(await fetch(`${server.baseUrl}${path}?f=json`), "GET", template);
      await expectDocumented(await fetch(`${server.baseUrl}${path}?f=html`), "GET", template);
      await expectDocumented(
        await fetch(`${server.baseUrl}${path}`, { headers: { accept: "text/html" } }),
        "GET",
        template,
      );
    }
    const missing = await fetch(`${server.baseUrl}/ogc/collections/fields`);
    expect(missing.status).toBe(404);
    await expectDocumented(missing, "GET", "/ogc/collections/{collectionId}");
  });

  it("items: pages with next links as GeoJSON and JSON, filtered by bbox and datetime; 400, 401, 406", async () => {
    const page = await server.request("GET", `${items}?limit=1`, { token });
    expect(page.headers.get("link")).toMatch(/rel="next"/);
    expect(((await expectDocumented(page, "GET", items)) as Json).numberReturned).toBe(1);
    const asJson = await server.request("GET", items, { token, headers: { accept: "application/json" } });
    expect(asJson.headers.get("content-type")).toMatch(/^application\/json/);
    await expectDocumented(asJson, "GET", items);
    const filtered = await server.request("GET", `${items}?bbox=-180,-90,180,90&datetime=2024-06-01T00:00:00Z/..`, {
      token,
    });
    expect(filtered.status).toBe(200);
    await expectDocumented(filtered, "GET", items);
    for (const query of ["?bbox=1,2", "?limit=0", "?f=xml", "?datetime=soon"]) {
      const bad = await server.request("GET", `${items}${query}`, { token });
      expect(bad.status, query).toBe(400);
      await expectDocumented(bad, "GET", items);
    }
    await expectDocumented(await server.request("GET", items), "GET", items);
    await expectDocumented(
      await server.request("GET", items, { token, headers: { accept: "text/html" } }),
      "GET",
      items,
    );
  });

  it("one item; create refusals (409, 413, 415, 422); delete (204, then 404; 400)", async () => {
    const at = `${items}/${featureIds[0]}`;
    const one = (await expectDocumented(await server.request("GET", at, { token }), "GET", item)) as Json;
    expect(one.id).toBe(featureIds[0]);
    for (const [options, status] of [
      [{ token }, 200],
      [{}, 401],
      [{ token, headers: { accept: "text/html" } }, 406],
    ] as const) {
      const res = await server.request("GET", at, options);
      expect(res.status).toBe(status);
      await expectDocumented(res, "GET", item);
    }
    await expectDocumented(await server.request("GET", `${at}?f=xml`, { token }), "GET", item);
    await expectDocumented(await server.request("GET", `${items}/src_nope`, { token }), "GET", item);
    const altId = (one.properties as Json).alt_id as string;
    for (const [options, status] of [
      [{ token, json: feature(altId) }, 409],
      [{ token, json: feature(unique("bad"), {}, { type: "Point", coordinates: [0, 0] }) }, 422],
      [{ token, body: "{}", headers: { "content-type": "text/plain" } }, 415],
      [{ json: feature(unique("no-token")) }, 401],
      [
        { token, body: `{"pad":"${"x".repeat(10 * 1024 * 1024)}"}`, headers: { "content-type": "application/json" } },
        413,
      ],
    ] as const) {
      const res = await server.request("POST", items, options);
      expect(res.status).toBe(status);
      await expectDocumented(res, "POST", items);
    }
    const notAdmin = await server.request("DELETE", `${at}?account_id=someone`, { token });
    expect(notAdmin.status).toBe(400);
    await expectDocumented(notAdmin, "DELETE", item);
    await expectDocumented(await server.request("DELETE", at), "DELETE", item);
    await expectDocumented(await server.request("DELETE", at, { token }), "DELETE", item);
    const gone = await server.request("DELETE", at, { token });
    expect(gone.status).toBe(404);
    await expectDocumented(gone, "DELETE", item);
  });
});

describe("the service's own paths", () => {
  it("health, readiness and metrics need no token", async () => {
    await expectDocumented(await fetch(`${server.baseUrl}/healthz`), "GET", "/healthz");
    await expectDocumented(await fetch(`${server.baseUrl}/readyz`), "GET", "/readyz");
    const metrics = await fetch(`${server.baseUrl}/metrics`);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain/);
    await expectDocumented(metrics, "GET", "/metrics");
  });

  it("/openapi.json: no token, the OpenAPI media type, JSON when only that is asked, 406, 304", async () => {
    const res = await fetch(`${server.baseUrl}/openapi.json`);
    expect(res.headers.get("content-type")).toBe(OPENAPI_TYPE);
    expect(res.headers.get("vary")).toMatch(/accept/i);
    const etag = res.headers.get("etag") as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    expect(await expectDocumented(res, "GET", "/openapi.json")).toEqual(doc);
    const json = await fetch(`${server.baseUrl}/openapi.json`, { headers: { accept: "application/json" } });
    expect(json.headers.get("content-type")).toMatch(/^application\/json/);
    await expectDocumented(json, "GET", "/openapi.json");
    const html = await fetch(`${server.baseUrl}/openapi.json`, { headers: { accept: "text/html" } });
    expect(html.status).toBe(406);
    const refused = html.clone();
    await expectDocumented(html, "GET", "/openapi.json");
    expect((await refused.json()).detail).toBe(
      "this resource answers application/vnd.oai.openapi+json;version=3.0 or application/json; ask with an Accept header that admits one",
    );
    const same = await fetch(`${server.baseUrl}/openapi.json`, { headers: { "if-none-match": etag } });
    expect(same.status).toBe(304);
    await expectDocumented(same, "GET", "/openapi.json");
    // With a token it is the same document (the token is not looked at).
    const withToken = await server.request("GET", "/openapi.json", { token: "not-a-token" });
    expect(withToken.status).toBe(200);
  });

  it("/docs: a page of local files only, every script a file (CSP script-src 'self'), each file served", async () => {
    const res = await fetch(`${server.baseUrl}/docs`);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain("unsafe-eval");
    const html = (await expectDocumented(res, "GET", "/docs")) as string;
    const references = [...html.matchAll(/\b(?:href|src)="([^"]*)"/g)].map((m) => m[1]);
    expect(references.length).toBe(5);
    expect(/<script(?![^>]*\bsrc=)[^>]*>/.test(html)).toBe(false);
    expect(/\son\w+=/.test(html)).toBe(false);
    const TYPES: Record<string, RegExp> = {
      css: /^text\/css; charset=utf-8$/,
      js: /^text\/javascript; charset=utf-8$/,
      png: /^image\/png$/,
    };
    let script = "";
    for (const reference of references) {
      expect(reference).toMatch(/^\/docs\/assets\/[\w.-]+$/);
      const asset = await fetch(`${server.baseUrl}${reference}`);
      const extension = reference.split(".").at(-1) as string;
      expect(asset.headers.get("content-type"), reference).toMatch(TYPES[extension]);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      const etag = asset.headers.get("etag") as string;
      const body = (await expectDocumented(asset, "GET", "/docs/assets/{file}")) as string;
      expect(body).not.toMatch(/sourceMappingURL/);
      if (reference.includes("/init.")) script = body;
      const again = await fetch(`${server.baseUrl}${reference}`, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      await expectDocumented(again, "GET", "/docs/assets/{file}");
    }
    expect(script).toContain('url: "/openapi.json"');
    const missing = await fetch(`${server.baseUrl}/docs/assets/swagger-ui.css`);
    expect(missing.status).toBe(404);
    await expectDocumented(missing, "GET", "/docs/assets/{file}");
    const etag = (await fetch(`${server.baseUrl}/docs`)).headers.get("etag") as string;
    const cached = await fetch(`${server.baseUrl}/docs`, { headers: { "if-none-match": etag } });
    expect(cached.status).toBe(304);
    await expectDocumented(cached, "GET", "/docs");
  });
});

describe("the development identity provider's paths, and a rate limit's 429", () => {
  it("token (200, 400, 401), keys (200); its token reaches the API, whose 429 fits the document", async () => {
    const client = dev.built.devIdentity?.demoClient;
    expect(client).toBeDefined();
    const grant = {
      grant_type: "client_credentials",
      client_id: client?.client_id,
      client_secret: client?.client_secret,
    };
    const token = (await expectDocumented(
      await dev.request("POST", "/oauth/token", { json: grant }),
      "POST",
      "/oauth/token",
      devDoc,
    )) as { access_token: string };
    const form = new URLSearchParams({ ...grant, grant_type: "password" } as Record<string, string>);
    await expectDocumented(
      await dev.request("POST", "/oauth/token", {
        body: form.toString(),
        headers: { "content-type": "application/x-www-form-urlencoded" },
      }),
      "POST",
      "/oauth/token",
      devDoc,
    );
    await expectDocumented(
      await dev.request("POST", "/oauth/token", { json: { ...grant, client_secret: "wrong" } }),
      "POST",
      "/oauth/token",
      devDoc,
    );
    await expectDocumented(
      await fetch(`${dev.baseUrl}/.well-known/jwks.json`),
      "GET",
      "/.well-known/jwks.json",
      devDoc,
    );
    // One read per second, bursts of two: the third read at once is refused.
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await dev.request("GET", "/sources", { token: token.access_token });
      statuses.push(res.status);
      await expectDocumented(res, "GET", "/sources", devDoc);
    }
    expect(statuses).toEqual([200, 200, 429]);
  });
});

describe("coverage", () => {
  it("every documented operation's success was checked, and every provokable error status", () => {
    const missing: string[] = [];
    for (const [name, document] of [
      ["main", doc],
      ["dev", devDoc],
    ] as const) {
      for (const [template, item] of Object.entries(document.paths)) {
        if (name === "dev" && !template.startsWith("/oauth") && !template.startsWith("/.well-known")) continue;
        for (const method of METHODS) {
          const operation = (item as Record<string, Operation | undefined>)[method];
          if (operation === undefined) continue;
          const success = Object.keys(operation.responses).filter((s) => /^2/.test(s));
          for (const status of success) {
            if (!checked.has(`${name} ${method.toUpperCase()} ${template} ${status}`)) {
              missing.push(`${name} ${method} ${template} ${status}`);
            }
          }
        }
      }
    }
    expect(missing).toEqual([]);
    const statuses = new Set([...checked].map((c) => c.split(" ").at(-1)));
    for (const status of ["304", "400", "401", "403", "404", "406", "409", "413", "415", "422", "429"]) {
      expect(statuses.has(status), status).toBe(true);
    }
  });
});
