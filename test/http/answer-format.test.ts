/** Content negotiation of every adapter (src/http/answer-format.ts, docs/api.md §16.1). */
import { describe, expect, it } from "vitest";
import { preferredMediaType } from "../../src/http/answer-format.js";

const JSON_TYPE = "application/json";
const GEOJSON = "application/geo+json";
const OFFERED = [JSON_TYPE, GEOJSON];

describe("preferredMediaType", () => {
  it("matches an offer with parameters by its own values, as the OGC landing page's OpenAPI link asks", () => {
    const openapi = "application/vnd.oai.openapi+json;version=3.0";
    const offers = [openapi, JSON_TYPE];
    expect(preferredMediaType("application/vnd.oai.openapi+json;version=3.0", offers)).toBe(openapi);
    expect(preferredMediaType("application/vnd.oai.openapi+json", offers)).toBe(openapi);
    expect(preferredMediaType(`${openapi}, application/json;q=0.5`, offers)).toBe(openapi);
    expect(preferredMediaType("application/vnd.oai.openapi+json;version=2.0", offers)).toBeUndefined();
    // Parameters after q are extensions of the Accept range, not of the media type.
    expect(preferredMediaType("application/json;q=0.9;level=1", OFFERED)).toBe(JSON_TYPE);
  });

  it("takes the first offer without a header, with an empty one, and whenever the header ranks offers alike", () => {
    for (const accept of [
      undefined,
      "",
      " ",
      "*/*",
      "application/*",
      "application/json, application/geo+json",
      "application/geo+json, application/json",
      "application/geo+json;q=0.7, application/json;q=0.7",
    ]) {
      expect(preferredMediaType(accept, OFFERED), String(accept)).toBe(JSON_TYPE);
    }
  });

  it("follows q-values first, then the most specific range", () => {
    expect(preferredMediaType("application/json;q=0.5, application/geo+json", OFFERED)).toBe(GEOJSON);
    expect(preferredMediaType("application/geo+json, */*", OFFERED)).toBe(GEOJSON);
    expect(preferredMediaType("application/geo+json;q=0.5, */*", OFFERED)).toBe(JSON_TYPE);
    // The most specific range decides a type's q, even when a wildcard ranks it higher.
    expect(preferredMediaType("*/*;q=1, application/json;q=0.1", OFFERED)).toBe(GEOJSON);
    expect(preferredMediaType("Application/GEO+JSON", OFFERED)).toBe(GEOJSON);
  });

  it("admits nothing refused with q=0 or named with a parameter the offers lack; undefined when nothing is admitted", () => {
    expect(preferredMediaType("application/json;q=0, */*", OFFERED)).toBe(GEOJSON);
    expect(preferredMediaType("application/json;q=0, application/geo+json;q=0", OFFERED)).toBeUndefined();
    expect(preferredMediaType("text/html, image/png", OFFERED)).toBeUndefined();
    expect(preferredMediaType("application/json;version=2", OFFERED)).toBeUndefined();
    expect(preferredMediaType("application/json;version=*", OFFERED)).toBe(JSON_TYPE);
    // Every answer is UTF-8.
    expect(preferredMediaType('application/geo+json; charset="UTF-8"', OFFERED)).toBe(GEOJSON);
    expect(preferredMediaType("application/json;charset=latin1", OFFERED)).toBeUndefined();
    expect(preferredMediaType("application/json;q=abc", OFFERED)).toBeUndefined();
    expect(preferredMediaType("garbage, , ;;", OFFERED)).toBeUndefined();
  });
});
