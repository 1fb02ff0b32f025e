/**
 * docs/api.md §12 over REST: GET /sources and GET /sources/{id} (and the sandbox's, and a search)
 * answer GeoJSON when asked by `Accept: application/geo+json` or `f=geojson`: a FeatureCollection
 * with `features`, `numberReturned` and `links` (the next page's), or one Feature whose `id` is the
 * record's, `geometry` its geometry and `properties` every other key of the record's JSON. `f`
 * wins over Accept; an unknown `f` is 422 at /query/f; an Accept that admits neither JSON nor
 * GeoJSON is 406.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  collection,
  createOk,
  ENVIRONMENTS,
  type Environment,
  expectProblem,
  expectViolation,
  inListOrder,
  type Json,
  list,
  manyFeatures,
  pathOf,
  RECORD_KEYS,
  type SourceRecord,
  unique,
} from "./rest-support.js";

let server: TestServer;
let token: string;
const created = new Map<Environment, SourceRecord[]>();

beforeAll(async () => {
  server = await startTestServer();
  token = await server.userToken(unique("geojson"));
  for (const env of ENVIRONMENTS) {
    created.set(env, inListOrder(await createOk(server, token, collection(manyFeatures(unique("g"), 5)), env)));
  }
});

afterAll(() => server.close());

/** The Feature a record's JSON stands for (docs/api.md §12). */
function featureOf(record: SourceRecord): Json {
  const { id, geometry, ...properties } = record;
  return { type: "Feature", id, geometry, properties };
}

async function geojson(res: Response, status = 200): Promise<Json> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get("content-type")).toBe("application/geo+json");
  expect(res.headers.get("vary")).toMatch(/accept/i);
  return JSON.parse(text) as Json;
}

describe.each(ENVIRONMENTS)("GeoJSON answers (%s)", (env) => {
  it("f=geojson: a FeatureCollection of exactly the list's records, in list order", async () => {
    const records = await list(server, token, "limit=100", env);
    expect(records).toHaveLength(5);
    const body = await geojson(await server.request("GET", pathOf(env, "?limit=100&f=geojson"), { token }));
    expect(body).toEqual({ type: "FeatureCollection", features: records.map(featureOf), numberReturned: 5, links: [] });
    const [first] = body.features as Json[];
    expect(Object.keys(first)).toEqual(["type", "id", "geometry", "properties"]);
    expect(Object.keys(first.properties as Json)).toEqual(RECORD_KEYS.filter((k) => k !== "id" && k !== "geometry"));
  });

  it("Accept: application/geo+json does the same, and the next link walks every page", async () => {
    const seen: string[] = [];
    let path: string | null = pathOf(env, "?limit=2");
    let pages = 0;
    while (path !== null) {
      const res = await server.request("GET", path, { token, headers: { accept: "application/geo+json" } });
      const link = res.headers.get("link");
      const body = await geojson(res);
      const features = body.features as Json[];
      expect(body.numberReturned).toBe(features.length);
      seen.push(...features.map((f) => f.id as string));
      const next = (body.links as Json[]).find((l) => l.rel === "next");
      if (next === undefined) {
        expect(link).toBeNull();
        path = null;
      } else {
        expect(next.type).toBe("application/geo+json");
        expect(link).toBe(`<${next.href}>; rel="next"`);
        expect(next.href).toMatch(new RegExp(`^${pathOf(env).replace("/", "\\/")}\\?limit=2&page_token=`));
        path = next.href as string;
      }
      pages += 1;
    }
    expect(pages).toBe(3);
    expect(seen).toEqual((created.get(env) as SourceRecord[]).map((r) => r.id));
  });

  it("f=geojson is kept in the next link", async () => {
    const res = await server.request("GET", pathOf(env, "?f=geojson&limit=2"), { token });
    const body = await geojson(res);
    const next = (body.links as Json[])[0];
    expect(next.href).toMatch(/\?f=geojson&limit=2&page_token=/);
    const second = await geojson(await server.request("GET", next.href as string, { token }));
    expect((second.features as Json[]).map((f) => f.id)).toEqual(
      (created.get(env) as SourceRecord[]).slice(2, 4).map((r) => r.id),
    );
  });

  it("GET /sources/{id}: one Feature, by f or by Accept", async () => {
    const [record] = created.get(env) as SourceRecord[];
    const byF = await geojson(await server.request("GET", pathOf(env, `/${record.id}?f=geojson`), { token }));
    expect(byF).toEqual(featureOf(record));
    const byAccept = await geojson(
      await server.request("GET", pathOf(env, `/${record.id}`), {
        token,
        headers: { accept: "text/html;q=0.9, application/geo+json" },
      }),
    );
    expect(byAccept).toEqual(featureOf(record));
  });

  it("JSON stays the default: no Accept, */*, both ranked alike, application/json, or f=json over an Accept of GeoJSON", async () => {
    const [record] = created.get(env) as SourceRecord[];
    for (const [query, accept] of [
      ["", undefined],
      ["", "*/*"],
      ["", "application/json, application/geo+json"],
      // Ranked alike, whatever the header's order: JSON (negotiator alone took the first named).
      ["", "application/geo+json, application/json"],
      ["", "application/geo+json;q=0.9, application/json;q=0.9"],
      ["", "application/*"],
      ["", "application/geo+json;q=0.5, application/json"],
      ["?f=json", "application/geo+json"],
    ] as const) {
      const res = await server.request("GET", pathOf(env, `/${record.id}${query}`), {
        token,
        headers: accept === undefined ? {} : { accept },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type"), `${query} ${accept}`).toMatch(/^application\/json(;|$)/);
      expect(await res.json()).toEqual(record);
    }
  });

  it("an Accept that admits neither is 406 with what can be asked for; f overrides it", async () => {
    for (const path of [pathOf(env), pathOf(env, `/${(created.get(env) as SourceRecord[])[0].id}`)]) {
      const res = await server.request("GET", path, { token, headers: { accept: "text/html, image/png" } });
      const problem = await expectProblem(res, 406, "invalid_argument");
      expect(problem.detail).toBe(
        "this resource answers application/json or application/geo+json; ask with an Accept header that admits one, or with f=json or f=geojson",
      );
      const forced = await server.request("GET", `${path}?f=geojson`, { token, headers: { accept: "text/html" } });
      expect(forced.status).toBe(200);
    }
  });

  it("an unknown or repeated f is 422 at /query/f", async () => {
    await expectViolation(
      await server.request("GET", pathOf(env, "?f=xml"), { token }),
      "/query/f",
      'f must be one of json, geojson, got "xml"',
    );
    await expectViolation(
      await server.request("GET", pathOf(env, "?f=json&f=geojson"), { token }),
      "/query/f",
      "f must be given at most once",
    );
  });

  it("the 406 and the 422 come after authentication", async () => {
    const res = await server.request("GET", pathOf(env, "?f=xml"), { headers: { accept: "text/html" } });
    await expectProblem(res, 401, "unauthenticated");
  });

  it("POST /sources/search answers GeoJSON too", async () => {
    const records = created.get(env) as SourceRecord[];
    const res = await server.request("POST", pathOf(env, "/search?f=geojson"), {
      token,
      json: { intersects: records[0].geometry, limit: 10 },
    });
    const body = await geojson(res);
    expect(body.features).toEqual([featureOf(records[0])]);
  });
});
