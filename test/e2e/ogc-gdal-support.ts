/**
 * Helpers for the GDAL acceptance tests (ogc-gdal.test.ts): whether GDAL's command-line tools are
 * installed, running them without blocking the in-process server, reading `ogrinfo -so` summaries,
 * and the polygons a GIS user converts with GDAL before posting them.
 */
import { execFile, spawnSync } from "node:child_process";
import type { Json } from "./rest-support.js";

/** `GDAL 3.6.2, released 2023/01/02` when both ogrinfo and ogr2ogr run; null when either is missing. */
export function gdalVersion(): string | null {
  let version: string | null = null;
  for (const tool of ["ogrinfo", "ogr2ogr"]) {
    const run = spawnSync(tool, ["--version"], { encoding: "utf8" });
    if (run.error || run.status !== 0) return null;
    version = run.stdout.trim();
  }
  return version;
}

export interface GdalRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a GDAL tool asynchronously (a synchronous child would block the event loop of the server it
 * talks to) with only the given GDAL settings: inherited GDAL_* / CPL_* variables are dropped, and
 * 127.0.0.1 never goes through a proxy. Resolves with the exit code and both outputs; never rejects.
 */
export function runGdal(
  tool: "ogrinfo" | "ogr2ogr",
  args: string[],
  settings: Record<string, string> = {},
  cwd?: string,
): Promise<GdalRun> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !/^(GDAL_|CPL_|OGR_)/.test(key)) env[key] = value;
  }
  const noProxy = ["127.0.0.1", "localhost", env.NO_PROXY ?? env.no_proxy].filter(Boolean).join(",");
  Object.assign(env, { NO_PROXY: noProxy, no_proxy: noProxy }, settings);
  return new Promise((resolve) => {
    execFile(tool, args, { env, cwd, maxBuffer: 256 * 1024 * 1024, encoding: "utf8" }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

export interface LayerSummary {
  name: string;
  geometry: string;
  featureCount: number;
  /** field name → OGR type as printed, e.g. `String`, `DateTime`, `StringList`. */
  fields: Map<string, string>;
}

/** The layers of an `ogrinfo -al -so` output, in the order printed. */
export function parseSummary(stdout: string): LayerSummary[] {
  const layers: LayerSummary[] = [];
  let layer: LayerSummary | undefined;
  for (const line of stdout.split("\n")) {
    const name = /^Layer name: (.+)$/.exec(line);
    if (name) {
      layer = { name: name[1], geometry: "", featureCount: Number.NaN, fields: new Map() };
      layers.push(layer);
      continue;
    }
    if (!layer) continue;
    const geometry = /^Geometry: (.+)$/.exec(line);
    if (geometry) layer.geometry = geometry[1];
    const count = /^Feature Count: (-?\d+)$/.exec(line);
    if (count) layer.featureCount = Number(count[1]);
    const field = /^([A-Za-z_][A-Za-z0-9_]*): ([A-Za-z]+)(\([A-Za-z]+\))? \(\d+\.\d+\)$/.exec(line);
    if (field) layer.fields.set(field[1], field[2]);
  }
  return layers;
}

/** The period every fixture polygon has, as a GIS user would fill it in. */
export const FIXTURE_PERIODS = [
  { start_at: "2024-01-01T00:00:00Z", end_at: "2025-01-01T00:00:00Z" },
  { start_at: "2024-06-01T12:30:00Z", end_at: "2026-01-01T00:00:00Z" },
  { start_at: "2023-03-15T00:00:00Z", end_at: "2024-03-15T00:00:00Z" },
] as const;

/**
 * Three sources as a GIS user keeps them: a square, a square with a hole and a two-part
 * MultiPolygon, 0.01° wide, near (x, y), with scalar attributes only (the formats GDAL writes have
 * no list columns) and the Feature `id` a GeoJSON editor writes. `extra` adds properties to each.
 */
export function fixturePolygons(prefix: string, x: number, y: number, extra: Json = {}): Json {
  const square = (x0: number, y0: number, d: number) => [
    [x0, y0],
    [x0 + d, y0],
    [x0 + d, y0 + d],
    [x0, y0 + d],
    [x0, y0],
  ];
  const hole = square(x + 0.032, y + 0.002, 0.002).reverse();
  const geometries = [
    { type: "Polygon", coordinates: [square(x, y, 0.01)] },
    { type: "Polygon", coordinates: [square(x + 0.03, y, 0.01), hole] },
    { type: "MultiPolygon", coordinates: [[square(x + 0.06, y, 0.01)], [square(x + 0.08, y, 0.01)]] },
  ];
  const attributes = [
    { source_type: "FIELD", geometry_source: "CUSTODIAN_DRAWN", outcome_reporting_year: 2024 },
    { source_type: "FIELD", geometry_source: "AUTHORITATIVE_GIS", outcome_reporting_year: 2025 },
    { source_type: "SITE", geometry_source: "DERIVED", outcome_reporting_year: 2024 },
  ];
  return {
    type: "FeatureCollection",
    features: geometries.map((geometry, i) => ({
      type: "Feature",
      id: `${prefix}-${i}`,
      geometry,
      properties: {
        alt_id: `${prefix}-${i}`,
        methodology: "VM0042",
        ...attributes[i],
        ...FIXTURE_PERIODS[i],
        ...extra,
      },
    })),
  };
}

/** The bbox query value around fixturePolygons(…, x, y). */
export function fixtureBbox(x: number, y: number): string {
  return [x - 0.001, y - 0.001, x + 0.1, y + 0.011].join(",");
}
