/**
 * docs/api.md §12, OGC API – Features under /ogc: the landing page, conformance and collections
 * (no token), items of `sources` and `sandbox-sources` with bbox, limit, the list filters and
 * absolute `next` links walked to the end, one item, Part 4 create (a Feature → 201 + Location, a
 * FeatureCollection all or nothing) and delete; OGC's statuses with problem details for bad input.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  collection,
  createOk,
  ENVIRONMENTS,
  type Environment,
  expectProblem,
  feature,
  inListOrder,
  type Json,
  manyFeatures,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let token: string;
let otherToken: string;
const created = new Map<Environment, SourceRecord[]>();

const COLLECTION: Record<Environment, string> = { production: "sources", sandbox: "sandbox-sources" };
const itemsOf = (env: Environment, rest = "") => `/ogc/collections/${COLLECTION[env]}/items${rest}`;

beforeAll(async () => {
  server = await startTestServer();
  token = await server.userToken(unique("ogc"));
  otherToken = await server.userToken(unique("ogc-other"));
  for (const env of ENVIRONMENTS) {
    const features = manyFeatures(unique("o"), 7, { source_type: "FIELD" });
    created.set(env, inListOrder(await createOk(server, token, collection(features), env)));
    // Another account's sources are never items of this caller's collection.
    await createOk(server, otherToken, collection(manyFeatures(unique("x"), 2)), env);
  }
});

afterAll(() => server.close());

async function json(res: Response, status = 200, type = /^application\/json(;|$)/): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get("content-type")).toMatch(type);
  return JSON.parse(text) as Json;
}
const GEOJSON = /^application\/geo\+json$/;

function featureOf(record: SourceRecord): Json {
  const { id, geometry, ...properties } = record;
  return { type: "Feature", id, geometry, properties };
}

describe("the documents that describe the service (no token)", () => {
  it("the landing page links itself, the API definition and documentation, conformance and the collections", async () => {
    const landing = await json(await server.request("GET", "/ogc"));
    const links = landing.links as Json[];
    const byRel = new Map(links.map((l) => [l.rel, l]));
    expect(byRel.get("self")?.href).toBe(`${server.baseUrl}/ogc`);
    expect(byRel.get("service-desc")).toMatchObject({
      href: `${server.baseUrl}/openapi.json`,
      type: "application/vnd.oai.openapi+json;version=3.0",
    });
    expect(byRel.get("service-doc")).toMatchObject({ href: `${server.baseUrl}/docs`, type: "text/html" });
    expect(byRel.get("conformance")?.href).toBe(`${server.baseUrl}/ogc/conformance`);
    expect(byRel.get("data")?.href).toBe(`${server.baseUrl}/ogc/collections`);
  });

  it("documents vary by Accept", async () => {
    for (const path of ["/ogc", "/ogc/conformance", "/ogc/collections"]) {
      const res = await server.request("GET", path);
      expect(res.status).toBe(200);
      expect(res.headers.get("vary")).toMatch(/\bAccept\b/);
    }
  });

  it("conformance lists Core, GeoJSON, OpenAPI 3.0 and Part 4's create/replace/delete", async () => {
    const body = await json(await server.request("GET", "/ogc/conformance"));
    expect(body.conformsTo).toEqual([
      "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
      "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
      "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
      "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete",
      "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/features",
    ]);
  });

  it("collections: sources and sandbox-sources, each with its GeoJSON items link", async () => {
    const body = await json(await server.request("GET", "/ogc/collections"));
    const collections = body.collections as Json[];
    expect(collections.map((c) => c.id)).toEqual(["sources", "sandbox-sources"]);
    for (const c of collections) {
      expect(c.itemType).toBe("feature");
      expect(c.crs).toEqual(["http://www.opengis.net/def/crs/OGC/1.3/CRS84"]);
      const items = (c.links as Json[]).find((l) => l.rel === "items");
      expect(items).toEqual({
        href: `${server.baseUrl}/ogc/collections/${c.id}/items`,
        rel: "items",
        type: "application/geo+json",
        title: expect.any(String),
      });
      const one = await json(await server.request("GET", `/ogc/collections/${c.id}`));
      expect(one).toEqual(c);
    }
  });

  it("an unknown collection is 404, f other than json 400, an Accept without JSON 406", async () => {
    const missing = await expectProblem(await server.request("GET", "/ogc/collections/fields"), 404, "not_found");
    expect(missing.detail).toContain('no collection "fields"');
    await expectProblem(await server.request("GET", "/ogc/collections/fields/items", { token }), 404, "not_found");
    const badF = await expectProblem(await server.request("GET", "/ogc?f=html"), 400, "invalid_argument");
    expect(badF.errors).toEqual([{ pointer: "/query/f", detail: 'f must be json, got "html"' }]);
    await expectProblem(await server.request("GET", "/ogc/conformance?unknown=1"), 400, "invalid_argument");
    const notJson = await expectProblem(
      await server.request("GET", "/ogc/collections", { headers: { accept: "text/html" } }),
      406,
      "invalid_argument",
    );
    expect(notJson.detail).toBe(
      "this resource answers application/json; ask with an Accept header that admits one, or with f=json",
    );
    for (const path of ["/ogc", "/ogc/conformance", "/ogc/collections", "/ogc/collections/sources"]) {
      const res = await server.request("POST", path, { json: {} });
      await expectProblem(res, 405, "unimplemented");
      expect(res.headers.get("allow")).toBe("GET");
    }
  });
});

describe.each(ENVIRONMENTS)("items of %s", (env) => {
  it("needs a token like /sources", async () => {
    await expectProblem(await server.request("GET", itemsOf(env)), 401, "unauthenticated");
  });

  it("every item of the caller, once, through absolute next links (limit 3); none of another account", async () => {
    const seen: string[] = [];
    let url: string | null = `${server.baseUrl}${itemsOf(env, "?limit=3")}`;
    let pages = 0;
    while (url !== null) {
      expect(url.startsWith(server.baseUrl)).toBe(true);
      const res = await server.request("GET", url.slice(server.baseUrl.length), { token });
      const page = await json(res, 200, GEOJSON);
      expect(page.type).toBe("FeatureCollection");
      expect(page.numberReturned).toBe((page.features as Json[]).length);
      expect(Date.parse(page.timeStamp as string)).not.toBeNaN();
      const links = page.links as Json[];
      expect(links.find((l) => l.rel === "self")?.href).toBe(url);
      const next = links.find((l) => l.rel === "next");
      expect(next === undefined || next.type === "application/geo+json").toBe(true);
      seen.push(...(page.features as Json[]).map((f) => f.id as string));
      url = (next?.href as string | undefined) ?? null;
      pages += 1;
    }
    expect(pages).toBe(3);
    const mine = created.get(env) as SourceRecord[];
    expect(seen).toEqual(mine.map((r) => r.id));
  });

  it("without limit a page holds 100 items (contract §12), with a next link; answers vary by Accept", async () => {
    const owner = await server.userToken(unique("ogc-default"));
    await createOk(server, owner, collection(manyFeatures(unique("d"), 101)), env);
    const res = await server.request("GET", itemsOf(env), { token: owner });
    expect(res.headers.get("vary")).toMatch(/\bAccept\b/);
    const page = await json(res, 200, GEOJSON);
    expect(page.numberReturned).toBe(100);
    expect((page.links as Json[]).some((l) => l.rel === "next")).toBe(true);
  });

  it("items are the same Features as GET /sources?f=geojson", async () => {
    const page = await json(await server.request("GET", itemsOf(env, "?limit=100"), { token }), 200, GEOJSON);
    expect(page.features).toEqual((created.get(env) as SourceRecord[]).map(featureOf));
  });

  it("bbox and the list filters narrow the items", async () => {
    const [first] = created.get(env) as SourceRecord[];
    const ring = (first.geometry as { coordinates: number[][][] }).coordinates[0];
    const xs = ring.map((p) => p[0]);
    const ys = ring.map((p) => p[1]);
    const box = [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)].join(",");
    const inBox = await json(await server.request("GET", itemsOf(env, `?bbox=${box}`), { token }), 200, GEOJSON);
    expect((inBox.features as Json[]).map((f) => f.id)).toEqual([first.id]);
    const fields = await json(await server.request("GET", itemsOf(env, "?source_type=FIELD"), { token }), 200, GEOJSON);
    expect(fields.numberReturned).toBe(7);
    const facilities = await json(
      await server.request("GET", itemsOf(env, "?source_type=FACILITY"), { token }),
      200,
      GEOJSON,
    );
    expect(facilities.numberReturned).toBe(0);
  });

  it("a limit above 1,000 is served at 1,000; below 1 or not a number is 400 at /query/limit", async () => {
    const big = await json(await server.request("GET", itemsOf(env, "?limit=5000"), { token }), 200, GEOJSON);
    expect(big.numberReturned).toBe(7);
    for (const limit of ["0", "-1", "ten"]) {
      const problem = await expectProblem(
        await server.request("GET", itemsOf(env, `?limit=${limit}`), { token }),
        400,
        "invalid_argument",
      );
      expect(problem.errors.map((e) => e.pointer)).toEqual(["/query/limit"]);
    }
  });

  it("bad bbox, unknown parameters and unknown f are 400; an Accept without GeoJSON or JSON 406", async () => {
    for (const query of ["?bbox=1,2,3", "?bbox=a,b,c,d", "?unknown=1", "?offset=3", "?f=xml"]) {
      await expectProblem(await server.request("GET", itemsOf(env, query), { token }), 400, "invalid_argument");
    }
    // offset is not taken at all: any value is only an unknown parameter, never read.
    for (const value of ["3", "x".repeat(500)]) {
      const offset = await expectProblem(
        await server.request("GET", itemsOf(env, `?offset=${value}`), { token }),
        400,
        "invalid_argument",
      );
      expect(offset.errors.map((e) => e.pointer)).toEqual(["/query/offset"]);
      expect(offset.errors[0].detail).toMatch(/^unknown query parameter "offset"; allowed here: /);
    }
    const notGeoJson = await expectProblem(
      await server.request("GET", itemsOf(env), { token, headers: { accept: "text/html" } }),
      406,
      "invalid_argument",
    );
    expect(notGeoJson.detail).toBe(
      "this resource answers application/geo+json or application/json; ask with an Accept header that admits one, or with f=json or f=geojson",
    );
    const badF = await expectProblem(
      await server.request("GET", itemsOf(env, "?f=xml"), { token }),
      400,
      "invalid_argument",
    );
    expect(badF.errors).toEqual([{ pointer: "/query/f", detail: 'f must be one of json, geojson, got "xml"' }]);
    const asJson = await server.request("GET", itemsOf(env), { token, headers: { accept: "application/json" } });
    expect(asJson.headers.get("content-type")).toMatch(/^application\/json/);
    expect((await asJson.json()).type).toBe("FeatureCollection");
  });

  it("one item: the Feature with self and collection links; another account's or unknown is 404", async () => {
    const [first] = created.get(env) as SourceRecord[];
    const item = await json(await server.request("GET", itemsOf(env, `/${first.id}`), { token }), 200, GEOJSON);
    const { links, ...feature } = item;
    expect(feature).toEqual(featureOf(first));
    expect((links as Json[]).map((l) => l.rel)).toEqual(["self", "collection"]);
    await expectProblem(
      await server.request("GET", itemsOf(env, `/${first.id}`), { token: otherToken }),
      404,
      "not_found",
    );
    await expectProblem(await server.request("GET", itemsOf(env, "/src_nope"), { token }), 404, "not_found");
  });

  it("create one Feature: 201, Location of the new item, the Feature; delete it: 204, then 404", async () => {
    const altId = unique("ogc-create");
    const res = await server.request("POST", itemsOf(env), {
      token,
      json: feature(altId, { source_type: "SITE" }),
      headers: { "content-type": "application/geo+json" },
    });
    const body = await json(res, 201, GEOJSON);
    const location = res.headers.get("location") as string;
    expect(location).toBe(`${server.baseUrl}${itemsOf(env, `/${body.id}`)}`);
    expect((body.properties as Json).alt_id).toBe(altId);
    const read = await json(
      await server.request("GET", location.slice(server.baseUrl.length), { token }),
      200,
      GEOJSON,
    );
    expect(read.id).toBe(body.id);
    expect((await server.request("DELETE", itemsOf(env, `/${body.id}`), { token })).status).toBe(204);
    await expectProblem(await server.request("GET", itemsOf(env, `/${body.id}`), { token }), 404, "not_found");
    await expectProblem(await server.request("DELETE", itemsOf(env, `/${body.id}`), { token }), 404, "not_found");
  });

  it("create a FeatureCollection: all or nothing; a bad feature is 422 pointing into the body", async () => {
    const good = manyFeatures(unique("ogc-batch"), 2);
    const res = await server.request("POST", itemsOf(env), { token, json: collection(good) });
    const body = await json(res, 201, GEOJSON);
    expect(body.type).toBe("FeatureCollection");
    expect(body.numberReturned).toBe(2);
    expect(res.headers.get("location")).toBeNull();
    // A collection of one is still answered as a collection: the body's shape decides, not the count.
    const one = await server.request("POST", itemsOf(env), { token, json: collection([feature(unique("ogc-one"))]) });
    const oneBody = await json(one, 201, GEOJSON);
    expect(oneBody.type).toBe("FeatureCollection");
    expect(oneBody.numberReturned).toBe(1);
    expect(one.headers.get("location")).toBeNull();
    const bad = [feature(unique("ok")), feature(unique("bad"), {}, { type: "Point", coordinates: [0, 0] })];
    const refused = await expectProblem(
      await server.request("POST", itemsOf(env), { token, json: collection(bad) }),
      422,
      "invalid_argument",
    );
    expect(refused.errors[0].pointer).toMatch(/^\/features\/1\/geometry/);
    const all = await json(await server.request("GET", itemsOf(env, "?limit=1000"), { token }), 200, GEOJSON);
    expect((all.features as Json[]).some((f) => (f.properties as Json).alt_id === (bad[0] as Json).id)).toBe(false);
  });

  it("an admin creates for the account named by account_id; without one, 400 at /query/account_id; a user naming one, 400", async () => {
    const admin = await server.adminToken();
    const account = unique("ogc-admin-target");
    const altId = unique("ogc-admin");
    const res = await server.request("POST", itemsOf(env, `?account_id=${encodeURIComponent(account)}`), {
      token: admin,
      json: feature(altId),
    });
    const body = await json(res, 201, GEOJSON);
    expect((body.properties as Json).account_id).toBe(account);
    const owner = await server.userToken(account);
    const mine = await json(await server.request("GET", itemsOf(env), { token: owner }), 200, GEOJSON);
    expect((mine.features as Json[]).map((f) => f.id)).toEqual([body.id]);
    // Not the caller's account: the user who made the token sees nothing of it.
    const theirs = await json(await server.request("GET", itemsOf(env), { token: otherToken }), 200, GEOJSON);
    expect((theirs.features as Json[]).some((f) => f.id === body.id)).toBe(false);

    const unnamed = await expectProblem(
      await server.request("POST", itemsOf(env), { token: admin, json: feature(unique("ogc-admin")) }),
      400,
      "invalid_argument",
    );
    expect(unnamed.errors).toEqual([
      {
        pointer: "/query/account_id",
        detail: "an admin token without an account claim must name the target account with account_id",
      },
    ]);
    const userNaming = await expectProblem(
      await server.request("POST", itemsOf(env, `?account_id=${encodeURIComponent(account)}`), {
        token,
        json: feature(unique("ogc-user")),
      }),
      400,
      "invalid_argument",
    );
    expect(userNaming.errors).toEqual([
      { pointer: "/query/account_id", detail: "account_id is accepted only from admin tokens" },
    ]);
    expect((await server.request("GET", itemsOf(env), { token: owner }).then((r) => r.json())).numberReturned).toBe(1);
  });

  it("a create's query problems alone are 400 (OGC's status for a parameter); with the body's, 422 listing both", async () => {
    const unknown = await expectProblem(
      await server.request("POST", itemsOf(env, "?foo=1"), { token, json: feature(unique("ogc-foo")) }),
      400,
      "invalid_argument",
    );
    expect(unknown.title).toBe("Bad Request");
    expect(unknown.errors.map((e) => e.pointer)).toEqual(["/query/foo"]);
    const both = await expectProblem(
      await server.request("POST", itemsOf(env, "?foo=1"), {
        token,
        json: feature(unique("ogc-foo"), {}, { type: "Point", coordinates: [0, 0] }),
      }),
      422,
      "invalid_argument",
    );
    expect(both.errors.map((e) => e.pointer)).toEqual(["/query/foo", "/geometry/type"]);
    expect(
      (await json(await server.request("GET", itemsOf(env, "?limit=1000"), { token }), 200, GEOJSON)).features,
    ).not.toContainEqual(
      expect.objectContaining({ properties: expect.objectContaining({ alt_id: expect.stringMatching(/^ogc-foo/) }) }),
    );
  });

  it("a flat source object is not a Part 4 body: 422 at /type, nothing stored", async () => {
    const altId = unique("ogc-flat");
    const refused = await expectProblem(
      await server.request("POST", itemsOf(env), {
        token,
        json: {
          alt_id: altId,
          start_at: "2024-01-01T00:00:00Z",
          end_at: "2025-01-01T00:00:00Z",
          geometry: (feature(altId) as Json).geometry,
        },
      }),
      422,
      "invalid_argument",
    );
    expect(refused.errors).toEqual([
      {
        pointer: "/type",
        detail:
          "the body must be a GeoJSON Feature or FeatureCollection, got an object without type (POST /sources also takes a flat source object)",
      },
    ]);
    const all = await json(await server.request("GET", itemsOf(env, "?limit=1000"), { token }), 200, GEOJSON);
    expect((all.features as Json[]).some((f) => (f.properties as Json).alt_id === altId)).toBe(false);
  });

  it("PUT and PATCH are 405 with Allow", async () => {
    const [first] = created.get(env) as SourceRecord[];
    const put = await server.request("PUT", itemsOf(env, `/${first.id}`), { token, json: featureOf(first) });
    await expectProblem(put, 405, "unimplemented");
    expect(put.headers.get("allow")).toBe("GET, DELETE");
  });

  it("another account's item cannot be deleted (404, and it stays)", async () => {
    const [first] = created.get(env) as SourceRecord[];
    await expectProblem(
      await server.request("DELETE", itemsOf(env, `/${first.id}`), { token: otherToken }),
      404,
      "not_found",
    );
    expect((await server.request("GET", itemsOf(env, `/${first.id}`), { token })).status).toBe(200);
  });
});
