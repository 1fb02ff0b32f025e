/**
 * S14 (issue 12): the same first page of 100 as GeoJSON and through OGC API – Features, against the
 * JSON page, back to back on one server: `GET /sources?limit=100&f=geojson` and
 * `GET /ogc/collections/sources/items?limit=100` within 10% of `GET /sources?limit=100`.
 */
import type { Row } from "../report.js";
import { fmt } from "./log.js";
import type { Plan } from "./options.js";
import { type Measurements, median, ratios } from "./rows.js";
import type { Scenario } from "./types.js";

const PAGE = "/sources?limit=100";
const VARIANTS = [
  { key: "S14-geojson", path: "/sources?limit=100&f=geojson", label: "GET /sources?limit=100&f=geojson" },
  {
    key: "S14-ogc",
    path: "/ogc/collections/sources/items?limit=100",
    label: "GET /ogc/collections/sources/items?limit=100",
  },
] as const;

export function scenarios(plan: Plan): Scenario[] {
  const stored = `(${fmt(plan.listLarge)} stored)`;
  return [
    {
      key: "S14-page",
      label: `GET ${PAGE} ${stored}`,
      server: "list-large",
      load: { kind: "paths", paths: [PAGE] },
      perRequest: 1,
    },
    ...VARIANTS.map(
      (v): Scenario => ({
        key: v.key,
        label: `${v.label} ${stored}`,
        server: "list-large",
        load: { kind: "paths", paths: [v.path] },
        perRequest: 1,
      }),
    ),
  ];
}

export function rows(m: Measurements): Row[] {
  return VARIANTS.map(
    (v): Row => ({
      id: `${v.key}.ratio`,
      scenario: `S14 ${m.label(v.key)}`,
      metric: `req/s vs GET ${PAGE}`,
      value: median(m.rps(v.key)),
      unit: "req/s",
      baseline: median(m.rps("S14-page")),
      ratio: ratios(m.rps(v.key), m.rps("S14-page")),
      target: { on: "ratio", op: ">=", threshold: 0.9 },
      profile: v.key,
      errors: m.failed(v.key) + m.failed("S14-page"),
      note: `p99 ${median(m.p99(v.key)).toFixed(0)} vs ${median(m.p99("S14-page")).toFixed(0)} ms`,
    }),
  );
}
