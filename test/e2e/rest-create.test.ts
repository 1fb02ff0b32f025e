/**
 * docs/api.md §4–§5 over REST, POST /sources: the three body shapes, the record format, geometry
 * round trips, alt_id rules, all-or-nothing, request-size bounds, 409 and concurrency.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import {
  altIds,
  collection,
  createOk,
  END,
  expectJson,
  expectProblem,
  expectViolation,
  feature,
  flat,
  freshPolygon,
  type Json,
  list,
  manyFeatures,
  polygon,
  START,
  square,
  unique,
} from "./rest-support.js";

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer();
});

afterAll(async () => {
  await server?.close();
});

/** A fresh account and a token for it: each test sees only its own sources. */
async function freshAccount(): Promise<{ account: string; token: string }> {
  const account = unique("acct-create");
  return { account, token: await server.userToken(account) };
}

describe("body shapes", () => {
  it("flat source: minimal body → a record with every key, nulls and [] for what was not given", async () => {
    const { account, token } = await freshAccount();
    const altId = unique("flat");
    const body = flat(altId);
    const [record] = await createOk(server, token, body);
    expect(record).toEqual({
      id: record.id,
      alt_id: altId,
      methodology: null,
      tags: [],
      steward_id: null,
      project_id: null,
      outcome_reporting_year: null,
      source_type: null,
      attribute_type: [],
      geometry_source: null,
      geometry: body.geometry,
      start_at: "2024-01-01T00:00:00.000Z",
      end_at: "2025-01-01T00:00:00.000Z",
      account_id: account,
      created_by: `Client ${account}`,
      updated_by: `Client ${account}`,
      created_at: record.created_at,
      updated_at: record.created_at,
      conflict: false,
      unep_overlap: null,
    });
    expect(Date.parse(record.created_at)).toBeGreaterThan(Date.now() - 60_000);
    expect(Date.parse(record.created_at)).toBeLessThanOrEqual(Date.now() + 1_000);
  });

  it("flat source with every optional field → all of them in the record", async () => {
    const { token } = await freshAccount();
    const body = flat(unique("flat-full"), {
      methodology: "VM0042 v2.0",
      tags: ["production", "storage"],
      steward_id: "steward-7",
      project_id: "project-x",
      outcome_reporting_year: 2024,
      source_type: "FIELD",
      attribute_type: ["CARBON_REMOVAL", "WATER_QUALITY"],
      geometry_source: "CUSTODIAN_DRAWN",
    });
    const [record] = await createOk(server, token, body);
    expect(record).toMatchObject({
      alt_id: body.alt_id,
      methodology: "VM0042 v2.0",
      tags: ["production", "storage"],
      steward_id: "steward-7",
      project_id: "project-x",
      outcome_reporting_year: 2024,
      source_type: "FIELD",
      attribute_type: ["CARBON_REMOVAL", "WATER_QUALITY"],
      geometry_source: "CUSTODIAN_DRAWN",
    });
  });

  it("a single Feature: id is the alt_id, the fields sit in properties", async () => {
    const { token } = await freshAccount();
    const altId = unique("single");
    const [record] = await createOk(
      server,
      token,
      feature(
        altId,
        { methodology: "M", tags: ["t"], outcome_reporting_year: 2030, source_type: "SITE" },
        polygon(5, 5),
      ),
    );
    expect(record).toMatchObject({
      alt_id: altId,
      methodology: "M",
      tags: ["t"],
      outcome_reporting_year: 2030,
      source_type: "SITE",
      geometry: polygon(5, 5),
    });
  });

  it("a Feature may carry its alt_id as properties.alt_id, or in both places when they agree", async () => {
    const { token } = await freshAccount();
    const viaProperty = unique("prop");
    const [a] = await createOk(server, token, feature(undefined, { alt_id: viaProperty }));
    expect(a.alt_id).toBe(viaProperty);
    const both = unique("both");
    const [b] = await createOk(server, token, feature(both, { alt_id: both }));
    expect(b.alt_id).toBe(both);
  });

  it("a Feature whose id and properties.alt_id differ → 422 at /properties/alt_id (and in a collection)", async () => {
    const { token } = await freshAccount();
    await expectViolation(
      await server.request("POST", "/sources", { token, json: feature("one", { alt_id: "two" }) }),
      "/properties/alt_id",
      `the feature's id ("one") and properties.alt_id ("two") differ`,
    );
    await expectViolation(
      await server.request("POST", "/sources", {
        token,
        json: collection([feature("ok-1"), feature("one", { alt_id: "two" })]),
      }),
      "/features/1/properties/alt_id",
      "differ",
    );
    expect(await list(server, token)).toEqual([]);
  });

  it("FeatureCollection: one record per feature, in request order", async () => {
    const { token } = await freshAccount();
    const order = ["e", "a", "d", "b", "c"].map((x) => unique(x));
    const records = await createOk(server, token, collection(order.map((id, i) => feature(id, {}, polygon(i * 2, 0)))));
    expect(altIds(records)).toEqual(order);
    records.forEach((r, i) => {
      expect(r.geometry).toEqual(polygon(i * 2, 0));
    });
    expect(new Set(records.map((r) => r.id)).size).toBe(order.length);
    expect(new Set(records.map((r) => r.created_at)).size).toBe(1);
  });

  it("FeatureCollection: collection-level optional fields apply to every feature unless its properties set them", async () => {
    const { token } = await freshAccount();
    const defaults = {
      methodology: "collection-methodology",
      tags: ["from-collection"],
      steward_id: "collection-steward",
      project_id: "collection-project",
      outcome_reporting_year: 2023,
      source_type: "FIELD",
      attribute_type: ["BIODIVERSITY"],
      geometry_source: "DERIVED",
    };
    const overrides = {
      methodology: "own-methodology",
      tags: ["own-a", "own-b"],
      steward_id: "own-steward",
      project_id: "own-project",
      outcome_reporting_year: 2025,
      source_type: "FACILITY",
      attribute_type: ["CI_SCORE", "RENEWABLE_ENERGY"],
      geometry_source: "AUTHORITATIVE_GIS",
    };
    const [inherits, overridesAll, overridesSome] = await createOk(
      server,
      token,
      collection(
        [
          feature(unique("inherit"), {}, polygon(0, 0)),
          feature(unique("override"), overrides, polygon(2, 0)),
          feature(unique("partial"), { methodology: "partial-methodology", tags: [] }, polygon(4, 0)),
        ],
        defaults,
      ),
    );
    expect(inherits).toMatchObject(defaults);
    expect(overridesAll).toMatchObject(overrides);
    expect(overridesSome).toMatchObject({ ...defaults, methodology: "partial-methodology", tags: [] });
  });

  it("a request with exactly 1,000 features is accepted", async () => {
    const { token } = await freshAccount();
    const records = await createOk(server, token, collection(manyFeatures(unique("k"), 1000)));
    expect(records).toHaveLength(1000);
    expect(await list(server, token, "limit=1000")).toHaveLength(1000);
  });

  it("application/json with a charset, and application/geo+json, are JSON content types", async () => {
    const { token } = await freshAccount();
    for (const type of ["application/json; charset=utf-8", "application/geo+json", "Application/JSON"]) {
      const body = JSON.stringify(feature(unique("ctype")));
      await expectJson(
        await server.request("POST", "/sources", { token, body, headers: { "content-type": type } }),
        201,
      );
    }
  });
});

describe("times", () => {
  it("are UTC with milliseconds, whatever offset and precision came in", async () => {
    const { token } = await freshAccount();
    const cases: [string, string, string, string][] = [
      ["2024-01-01T00:00:00Z", "2024-06-30T23:59:59Z", "2024-01-01T00:00:00.000Z", "2024-06-30T23:59:59.000Z"],
      [
        "2024-01-01T02:00:00+02:00",
        "2024-01-01T00:00:00-05:30",
        "2024-01-01T00:00:00.000Z",
        "2024-01-01T05:30:00.000Z",
      ],
      [
        "2024-02-29T12:00:00.5Z",
        "2024-02-29T12:00:01.123456789Z",
        "2024-02-29T12:00:00.500Z",
        "2024-02-29T12:00:01.123Z",
      ],
      ["2024-01-01t00:00:00z", "2024-01-01T00:00:00.001Z", "2024-01-01T00:00:00.000Z", "2024-01-01T00:00:00.001Z"],
    ];
    for (const [startAt, endAt, start, end] of cases) {
      const [record] = await createOk(server, token, flat(unique("time"), { start_at: startAt, end_at: endAt }));
      expect([record.start_at, record.end_at]).toEqual([start, end]);
    }
  });
});

describe("geometry comes back as submitted", () => {
  const cases: [string, Json, Json][] = [
    [
      "a clockwise ring starting at an arbitrary vertex, with fractional coordinates",
      {
        type: "Polygon",
        coordinates: [
          [
            [12.3456789012345, -45.6789],
            [12.3456789012345, -44.1],
            [13.987654321, -44.1],
            [13.987654321, -45.6789],
            [12.3456789012345, -45.6789],
          ],
        ],
      },
      {
        type: "Polygon",
        coordinates: [
          [
            [12.3456789012345, -45.6789],
            [12.3456789012345, -44.1],
            [13.987654321, -44.1],
            [13.987654321, -45.6789],
            [12.3456789012345, -45.6789],
          ],
        ],
      },
    ],
    [
      "altitudes are dropped",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0, 10],
            [1, 0, 11.5],
            [1, 1, 12],
            [0, 1, 13],
            [0, 0, 10],
          ],
        ],
      },
      polygon(),
    ],
    [
      "consecutive duplicate positions are kept",
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 0],
            [1, 1],
            [0, 1],
            [0, 0],
          ],
        ],
      },
      {
        type: "Polygon",
        coordinates: [
          [
            [0, 0],
            [1, 0],
            [1, 0],
            [1, 1],
            [0, 1],
            [0, 0],
          ],
        ],
      },
    ],
    [
      "a polygon with a hole",
      {
        type: "Polygon",
        coordinates: [
          square(0, 0, 10),
          [
            [2, 2],
            [2, 4],
            [4, 4],
            [4, 2],
            [2, 2],
          ],
        ],
      },
      {
        type: "Polygon",
        coordinates: [
          square(0, 0, 10),
          [
            [2, 2],
            [2, 4],
            [4, 4],
            [4, 2],
            [2, 2],
          ],
        ],
      },
    ],
    [
      "a MultiPolygon whose parts touch at a point, one with a hole",
      {
        type: "MultiPolygon",
        coordinates: [
          [square(0, 0, 1)],
          [
            square(1, 1, 3),
            [
              [2, 2],
              [3, 2],
              [3, 3],
              [2, 2],
            ],
          ],
        ],
      },
      {
        type: "MultiPolygon",
        coordinates: [
          [square(0, 0, 1)],
          [
            square(1, 1, 3),
            [
              [2, 2],
              [3, 2],
              [3, 3],
              [2, 2],
            ],
          ],
        ],
      },
    ],
    [
      "a single-part MultiPolygon stays a MultiPolygon",
      { type: "MultiPolygon", coordinates: [[square(170, -80, 10)]] },
      { type: "MultiPolygon", coordinates: [[square(170, -80, 10)]] },
    ],
    [
      "extreme but valid longitudes and latitudes",
      {
        type: "MultiPolygon",
        coordinates: [
          [
            [
              [-180, -90],
              [-179, -90],
              [-179, -89],
              [-180, -89],
              [-180, -90],
            ],
          ],
          [
            [
              [179, 89],
              [180, 89],
              [180, 90],
              [179, 90],
              [179, 89],
            ],
          ],
        ],
      },
      {
        type: "MultiPolygon",
        coordinates: [
          [
            [
              [-180, -90],
              [-179, -90],
              [-179, -89],
              [-180, -89],
              [-180, -90],
            ],
          ],
          [
            [
              [179, 89],
              [180, 89],
              [180, 90],
              [179, 90],
              [179, 89],
            ],
          ],
        ],
      },
    ],
  ];

  it.each(cases)("%s", async (_name, submitted, expected) => {
    const { token } = await freshAccount();
    const [record] = await createOk(server, token, flat(unique("geom"), { geometry: submitted }));
    expect(record.geometry).toEqual(expected);
    expect(await expectJson(await server.request("GET", `/sources/${record.id}`, { token }), 200)).toEqual(record);
  });
});

describe("unknown members are ignored", () => {
  it("foreign members on the collection, features, properties, geometry and flat body", async () => {
    const { token } = await freshAccount();
    const altA = unique("gis-a");
    const altB = unique("gis-b");
    const geometry = freshPolygon();
    const records = await createOk(server, token, {
      type: "FeatureCollection",
      name: "export_2024",
      crs: { type: "name", properties: { name: "urn:ogc:def:crs:OGC:1.3:CRS84" } },
      bbox: [0, 0, 3, 1],
      features: [
        {
          type: "Feature",
          id: altA,
          bbox: [0, 0, 1, 1],
          geometry: { ...geometry, bbox: [0, 0, 1, 1] },
          properties: {
            start_at: START,
            end_at: END,
            OBJECTID: 1,
            Shape_Area: 1.0,
            account_id: "acct-evil",
            id: "src_FORGED",
            conflict: true,
          },
        },
        {
          type: "Feature",
          id: altB,
          geometry: freshPolygon(),
          properties: { start_at: START, end_at: END, created_by: "someone else" },
        },
      ],
    });
    expect(altIds(records)).toEqual([altA, altB]);
    expect(records[0].account_id).not.toBe("acct-evil");
    expect(records[0].id).not.toBe("src_FORGED");
    expect(records[0].conflict).toBe(false);
    expect(records[0].geometry).toEqual(geometry);
    expect(records[1].created_by).not.toBe("someone else");
    const [flatRecord] = await createOk(
      server,
      token,
      flat(unique("flat-extra"), { foo: "bar", nested: { x: 1 }, account_id: "acct-evil" }),
    );
    expect(flatRecord.account_id).not.toBe("acct-evil");
  });
});

describe("all-or-nothing", () => {
  it("one bad feature among good ones → 422 pointing at it, and nothing stored", async () => {
    const { token } = await freshAccount();
    const good = manyFeatures(unique("good"), 5);
    const bad = feature(unique("bad"), { end_at: "2023-01-01T00:00:00Z" });
    await expectViolation(
      await server.request("POST", "/sources", {
        token,
        json: collection([...good.slice(0, 3), bad, ...good.slice(3)]),
      }),
      "/features/3/properties/end_at",
      "end_at must be after start_at",
    );
    expect(await list(server, token)).toEqual([]);
  });

  it("every violation of every feature is listed", async () => {
    const { token } = await freshAccount();
    const res = await server.request("POST", "/sources", {
      token,
      json: collection([
        feature("ok"),
        feature("", { outcome_reporting_year: 999 }),
        feature("x", { source_type: "field", start_at: "nope" }),
      ]),
    });
    const body = await expectProblem(res, 422, "invalid_argument");
    expect(body.errors.map((e) => e.pointer).sort()).toEqual(
      [
        "/features/1/id",
        "/features/1/properties/outcome_reporting_year",
        "/features/2/properties/source_type",
        "/features/2/properties/start_at",
      ].sort(),
    );
    expect(body.detail).toMatch(/\(and 3 more\)$/);
    expect(await list(server, token)).toEqual([]);
  });

  it("values at every length and range limit are accepted and kept as sent (characters, not bytes)", async () => {
    const { token } = await freshAccount();
    // 256 characters of which 128 take 4 bytes in UTF-8 and two UTF-16 units each.
    const altId = "🌾a".repeat(128);
    const tags = Array.from({ length: 64 }, (_, i) => `${String(i).padStart(2, "0")}${"é".repeat(126)}`);
    const bodies = [
      flat(altId, {
        methodology: "m".repeat(256),
        steward_id: "s".repeat(256),
        project_id: "p".repeat(256),
        tags,
        outcome_reporting_year: 1000,
      }),
      flat(unique("year-9999"), { outcome_reporting_year: 9999 }),
    ];
    const [first] = await createOk(server, token, bodies[0]);
    expect([...first.alt_id]).toHaveLength(256);
    expect(first).toMatchObject({
      alt_id: altId,
      methodology: "m".repeat(256),
      steward_id: "s".repeat(256),
      project_id: "p".repeat(256),
      tags,
      outcome_reporting_year: 1000,
    });
    const [second] = await createOk(server, token, bodies[1]);
    expect(second.outcome_reporting_year).toBe(9999);
  });

  it("holes may touch their shell, or each other, at single points (docs/api.md §5)", async () => {
    const { token } = await freshAccount();
    const shell = square(30, 30, 4);
    // One hole touching the shell's west edge at (30, 32); another touching that hole at (31, 32).
    const touchingShell = [
      [30, 32],
      [31, 31.5],
      [31, 32],
      [30.5, 32.5],
      [30, 32],
    ];
    const touchingHole = [
      [31, 32],
      [32, 31],
      [33, 32],
      [32, 33],
      [31, 32],
    ];
    const [record] = await createOk(
      server,
      token,
      flat(unique("touching-holes"), {
        geometry: { type: "Polygon", coordinates: [shell, touchingShell, touchingHole] },
      }),
    );
    expect((record.geometry as { coordinates: unknown[] }).coordinates).toEqual([shell, touchingShell, touchingHole]);
  });

  it("an unknown query parameter on create → 422 at /query/<name>, nothing stored", async () => {
    const { token } = await freshAccount();
    for (const path of ["/sources?bogus=1", "/sandbox/sources?methodology=VM0042"]) {
      const res = await server.request("POST", path, { token, json: flat(unique("query")) });
      const name = path.slice(path.indexOf("?") + 1, path.indexOf("="));
      await expectViolation(res, `/query/${name}`, `unknown query parameter "${name}"; allowed here: account_id`);
    }
    expect(await list(server, token)).toEqual([]);
    const sandbox = await expectJson<unknown[]>(await server.request("GET", "/sandbox/sources", { token }), 200);
    expect(sandbox).toEqual([]);
  });

  it("1,001 features → 422 at /features, nothing stored", async () => {
    const { token } = await freshAccount();
    await expectViolation(
      await server.request("POST", "/sources", { token, json: collection(manyFeatures(unique("many"), 1001)) }),
      "/features",
      "at most 1000 sources are allowed in one request, got 1001",
    );
    expect(await list(server, token)).toEqual([]);
  });

  it("an empty FeatureCollection → 422 at /features", async () => {
    const { token } = await freshAccount();
    await expectViolation(
      await server.request("POST", "/sources", { token, json: collection([]) }),
      "/features",
      "at least one source is required",
    );
  });
});

describe("alt_id uniqueness", () => {
  it("a repeat inside one request → 422 at the repeat, nothing stored", async () => {
    const { token } = await freshAccount();
    const alt = unique("twice");
    await expectViolation(
      await server.request("POST", "/sources", {
        token,
        json: collection([feature(alt), feature(unique("other"), {}, polygon(3, 3)), feature(alt, {}, polygon(5, 5))]),
      }),
      "/features/2/id",
      `alt_id "${alt}" repeats source 0 of this request`,
    );
    expect(await list(server, token)).toEqual([]);
  });

  it("the alt_id of a stored source → 409 already_exists at the feature, nothing stored", async () => {
    const { token } = await freshAccount();
    const [stored] = await createOk(server, token, flat(unique("taken")));
    const fresh = unique("fresh");
    const res = await server.request("POST", "/sources", {
      token,
      json: collection([feature(fresh), feature(stored.alt_id, {}, polygon(4, 4))]),
    });
    const body = await expectProblem(res, 409, "already_exists");
    expect(body.errors).toEqual([
      { pointer: "/features/1/id", detail: `alt_id "${stored.alt_id}" is already used by a source of this account` },
    ]);
    expect(await list(server, token)).toEqual([stored]);
    // Flat shape: the pointer is /alt_id.
    const flatRes = await server.request("POST", "/sources", { token, json: flat(stored.alt_id) });
    expect((await expectProblem(flatRes, 409, "already_exists")).errors.map((e) => e.pointer)).toEqual(["/alt_id"]);
  });

  it("deleting a source frees its alt_id (by id and by alt_id)", async () => {
    const { token } = await freshAccount();
    const alt = unique("reuse");
    const [first] = await createOk(server, token, flat(alt));
    expect((await server.request("DELETE", `/sources/${first.id}`, { token })).status).toBe(204);
    const [second] = await createOk(server, token, flat(alt));
    expect(second.id).not.toBe(first.id);
    expect((await server.request("DELETE", `/sources?alt_id=${encodeURIComponent(alt)}`, { token })).status).toBe(204);
    const [third] = await createOk(server, token, flat(alt));
    expect(await list(server, token)).toEqual([third]);
  });

  it("alt_ids are unique per account, not globally", async () => {
    const alt = unique("shared");
    const one = await freshAccount();
    const two = await freshAccount();
    const [a] = await createOk(server, one.token, flat(alt));
    const [b] = await createOk(server, two.token, flat(alt));
    expect([a.account_id, b.account_id]).toEqual([one.account, two.account]);
  });

  it("20 concurrent creates with the same alt_id → exactly one 201, the rest 409", async () => {
    const { token } = await freshAccount();
    const alt = unique("race");
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        server.request("POST", "/sources", { token, json: flat(alt, { geometry: polygon(i * 2, 0) }) }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses).toEqual([201, ...Array<number>(19).fill(409)]);
    for (const res of responses) {
      if (res.status === 409) {
        const body = await expectProblem(res, 409, "already_exists");
        expect(body.errors.map((e) => e.pointer)).toEqual(["/alt_id"]);
      } else {
        await res.arrayBuffer();
      }
    }
    const stored = await list(server, token);
    expect(altIds(stored)).toEqual([alt]);
  });

  it("a batch refused 409 among concurrent creates: nothing of it stored, its neighbours stored whole", async () => {
    const { token } = await freshAccount();
    const [taken] = await createOk(server, token, flat(unique("taken")));
    const before = unique("before");
    const clashing = unique("clashing");
    const after = unique("after");
    const [first, refused, last] = await Promise.all([
      server.request("POST", "/sources", { token, json: collection([feature(before), feature(`${before}-2`)]) }),
      server.request("POST", "/sources", {
        token,
        json: collection([feature(clashing), feature(taken.alt_id, {}, polygon(6, 6))]),
      }),
      server.request("POST", "/sources", { token, json: collection([feature(after)]) }),
    ]);
    expect([first.status, last.status]).toEqual([201, 201]);
    await Promise.all([first.arrayBuffer(), last.arrayBuffer()]);
    const body = await expectProblem(refused, 409, "already_exists");
    expect(body.errors.map((e) => e.pointer)).toEqual(["/features/1/id"]);
    expect(altIds(await list(server, token)).sort()).toEqual([taken.alt_id, before, `${before}-2`, after].sort());
  });
});
