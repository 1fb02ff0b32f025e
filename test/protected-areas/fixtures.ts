import { once } from "node:events";
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PolygonGeometry } from "../../src/geo/types.js";
import { ring } from "../support/geometry-fixtures.js";

export type Json = Record<string, unknown>;

/** A counter-clockwise lon/lat rectangle. */
export function rect(minX: number, minY: number, maxX: number, maxY: number): PolygonGeometry {
  return { type: "Polygon", coordinates: [ring(minX, minY, maxX, maxY)] };
}

/** A WDPA-style protected-area Feature. */
export function paFeature(wdpaId: unknown, geometry: unknown, properties: Json = {}): Json {
  return {
    type: "Feature",
    properties: {
      WDPAID: wdpaId,
      NAME: `Area ${String(wdpaId)}`,
      DESIG_ENG: "National Park",
      IUCN_CAT: "II",
      ...properties,
    },
    geometry,
  };
}

export function featureCollection(features: unknown[], extra: Json = {}): Json {
  return { type: "FeatureCollection", ...extra, features };
}

export interface TempDir {
  dir: string;
  path(name: string): string;
  /** Writes `value` as JSON (or a string as is) and returns its path. */
  write(name: string, value: unknown): string;
  remove(): void;
}

export function tempDir(prefix = "protected-areas-"): TempDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return {
    dir,
    path: (name) => join(dir, name),
    write(name, value) {
      const path = join(dir, name);
      writeFileSync(path, typeof value === "string" ? value : JSON.stringify(value));
      return path;
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Writes a FeatureCollection of `count` small squares (0.01°, on a grid) to `path` through a
 * stream, so the test itself never holds the file's text. Every `invalidEvery`-th feature (if
 * given) has a self-intersecting ring; `padding` characters of text in a property make the file
 * larger without making the geometry work heavier. Returns the file's size in bytes.
 */
export async function writeGridFile(
  path: string,
  count: number,
  options: { invalidEvery?: number; padding?: number } = {},
): Promise<number> {
  const comment = "x".repeat(options.padding ?? 0);
  const out = createWriteStream(path);
  let bytes = 0;
  const write = async (text: string) => {
    bytes += Buffer.byteLength(text);
    if (!out.write(text)) await once(out, "drain");
  };
  await write('{"type":"FeatureCollection","name":"grid","features":[\n');
  for (let i = 0; i < count; i++) {
    const x = -170 + (i % 1000) * 0.3;
    const y = -80 + Math.floor(i / 1000) * 0.3;
    const bowtie = options.invalidEvery !== undefined && i % options.invalidEvery === 0;
    const outline = bowtie
      ? [
          [x, y],
          [x + 0.01, y + 0.01],
          [x + 0.01, y],
          [x, y + 0.01],
          [x, y],
        ]
      : ring(x, y, x + 0.01, y + 0.01);
    const feature = {
      type: "Feature",
      properties: {
        WDPAID: 100000 + i,
        NAME: `Grid area ${i}`,
        DESIG_ENG: "Nature Reserve",
        IUCN_CAT: "IV",
        STATUS: "Designated",
        REP_AREA: 1.23,
        COMMENT: comment,
      },
      geometry: { type: "Polygon", coordinates: [outline] },
    };
    await write(`${i === 0 ? "" : ",\n"}${JSON.stringify(feature)}`);
  }
  await write("\n]}\n");
  out.end();
  await once(out, "finish");
  return bytes;
}
