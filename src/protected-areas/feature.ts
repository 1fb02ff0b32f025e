import { geodesicAreaM2 } from "../geo/area.js";
import { boundingBox } from "../geo/bbox.js";
import { countPositions } from "../geo/parts.js";
import type { GeometryIssue, PolygonCoordinates, Position, SourceGeometry } from "../geo/types.js";
import { checkGeometry } from "../geo/validity.js";
import { checkStructure, MAX_POSITIONS } from "../geo/validity-structure.js";
import { checkTopology } from "../geo/validity-topology.js";
import type { NewProtectedArea } from "../store/protected-area-layers.js";

/** What became of one element of the `features` array. */
export type FeatureVerdict =
  | { ok: true; area: NewProtectedArea }
  | { ok: false; wdpaId: string | null; reason: string };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "string") return `"${value.length > 40 ? `${value.slice(0, 40)}…` : value}"`;
  return typeof value === "object" ? "an object" : `${typeof value} ${String(value)}`;
}

/** WDPAID as a string: WDPA exports it as an integer-valued number; some tools quote it. */
function wdpaIdOf(properties: Record<string, unknown>): string | null {
  const raw = properties.WDPAID;
  if (typeof raw === "number" && Number.isFinite(raw)) return String(raw);
  if (typeof raw === "string" && raw.trim() !== "") return raw.trim();
  return null;
}

/** Optional text attributes: a string, a number written out, or "" when absent or null. */
function textOf(properties: Record<string, unknown>, name: string): string {
  const raw = properties[name];
  if (typeof raw === "string") return raw;
  if (typeof raw === "number" || typeof raw === "boolean") return String(raw);
  return "";
}

/** A ring of positions (2 or 3 numbers; altitudes dropped), or a description of what is wrong. */
function ringOf(raw: unknown, where: string): Position[] | string {
  if (!Array.isArray(raw)) return `${where} is not an array of positions`;
  const ring: Position[] = new Array<Position>(raw.length);
  for (let i = 0; i < raw.length; i++) {
    const p: unknown = raw[i];
    if (
      !Array.isArray(p) ||
      (p.length !== 2 && p.length !== 3) ||
      typeof p[0] !== "number" ||
      typeof p[1] !== "number" ||
      (p.length === 3 && typeof p[2] !== "number")
    ) {
      return `position ${i} of ${where} is not a position of 2 or 3 numbers`;
    }
    ring[i] = p.length === 2 ? (p as Position) : [p[0], p[1]];
  }
  return ring;
}

function polygonOf(raw: unknown, where: string): PolygonCoordinates | string {
  if (!Array.isArray(raw)) return `${where} is not an array of rings`;
  const rings: PolygonCoordinates = [];
  for (let i = 0; i < raw.length; i++) {
    const ring = ringOf(
      raw[i],
      i === 0
        ? `the exterior ring${where === "the polygon" ? "" : ` of ${where}`}`
        : `hole ${i}${where === "the polygon" ? "" : ` of ${where}`}`,
    );
    if (typeof ring === "string") return ring;
    rings.push(ring);
  }
  return rings;
}

/** The GeoJSON geometry as a typed Polygon or MultiPolygon, or a reason it is not one. */
function geometryOf(raw: unknown): SourceGeometry | string {
  if (raw === undefined || raw === null) return "the feature has no geometry";
  if (!isRecord(raw)) return `its geometry is ${describe(raw)}, not a GeoJSON geometry object`;
  if (raw.type !== "Polygon" && raw.type !== "MultiPolygon") {
    return `its geometry type is ${describe(raw.type)}; only Polygon and MultiPolygon are accepted`;
  }
  if (raw.type === "Polygon") {
    const polygon = polygonOf(raw.coordinates, "the polygon");
    return typeof polygon === "string" ? `invalid geometry: ${polygon}` : { type: "Polygon", coordinates: polygon };
  }
  if (!Array.isArray(raw.coordinates))
    return "invalid geometry: the MultiPolygon's coordinates are not an array of polygons";
  const polygons: PolygonCoordinates[] = [];
  for (let i = 0; i < raw.coordinates.length; i++) {
    const polygon = polygonOf(raw.coordinates[i], `polygon ${i}`);
    if (typeof polygon === "string") return `invalid geometry: ${polygon}`;
    polygons.push(polygon);
  }
  return { type: "MultiPolygon", coordinates: polygons };
}

/** The first geometry issue (docs/api.md §5 rules, as checkGeometry applies them), and how many there are. */
function geometryIssue(g: SourceGeometry): { first: GeometryIssue; count: number } | null {
  if (countPositions(g) <= MAX_POSITIONS) {
    const issues = checkGeometry(g);
    return issues.length === 0 ? null : { first: issues[0], count: issues.length };
  }
  // A protected area (a coastline, a marine reserve) may have millions of vertices and is still
  // worth loading: the same structural rules without the client limit, then the first topology issue.
  const structural = checkStructure(g, Number.POSITIVE_INFINITY);
  if (structural.length > 0) return { first: structural[0], count: structural.length };
  const issue = checkTopology(g);
  return issue === null ? null : { first: issue, count: 1 };
}

/**
 * One element of a WDPA-style FeatureCollection → a protected area, or the reason it is rejected:
 * not a Feature, no WDPAID, no geometry, a geometry other than Polygon/MultiPolygon, or a geometry
 * checkGeometry finds invalid. `NAME`, `DESIG_ENG` and `IUCN_CAT` are optional ("" when absent).
 */
export function protectedAreaFromFeature(value: unknown): FeatureVerdict {
  if (!isRecord(value))
    return { ok: false, wdpaId: null, reason: `it is ${describe(value)}, not a GeoJSON Feature object` };
  if (value.type !== "Feature") {
    return { ok: false, wdpaId: null, reason: `its "type" is ${describe(value.type)}, not "Feature"` };
  }
  const properties = isRecord(value.properties) ? value.properties : {};
  const wdpaId = wdpaIdOf(properties);
  if (wdpaId === null) {
    const raw = properties.WDPAID;
    return {
      ok: false,
      wdpaId: null,
      reason:
        raw === undefined || raw === null
          ? "it has no WDPAID property"
          : `its WDPAID is ${describe(raw)}, not a number or a non-empty string`,
    };
  }
  const geometry = geometryOf(value.geometry);
  if (typeof geometry === "string") return { ok: false, wdpaId, reason: geometry };
  const issue = geometryIssue(geometry);
  if (issue !== null) {
    const more = issue.count > 1 ? ` (and ${issue.count - 1} more issue${issue.count > 2 ? "s" : ""})` : "";
    return { ok: false, wdpaId, reason: `invalid geometry: ${issue.first.detail}${more}` };
  }
  return {
    ok: true,
    area: {
      id: wdpaId,
      name: textOf(properties, "NAME"),
      designation: textOf(properties, "DESIG_ENG"),
      iucnCategory: textOf(properties, "IUCN_CAT"),
      geometry,
      bbox: boundingBox(geometry),
      areaM2: geodesicAreaM2(geometry),
    },
  };
}
