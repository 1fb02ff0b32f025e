import { schemaRef } from "./refs.js";
import type { Schema } from "./types.js";

/**
 * GeoJSON (RFC 7946) as the service reads and writes it (docs/api.md §4.3, §4.4, §13): answers
 * carry exactly `type` and `coordinates` with longitude, latitude positions (altitudes dropped);
 * requests may add an altitude and foreign members, which are ignored.
 */

const number: Schema = { type: "number" };

function position(maxItems: 2 | 3, description: string): Schema {
  return { type: "array", items: number, minItems: 2, maxItems, description, example: [-93.6, 41.6] };
}

const ringOf = (positionName: string): Schema => ({
  type: "array",
  description: "A closed ring: at least 4 positions, the last equal to the first.",
  items: schemaRef(positionName),
  minItems: 4,
});

function polygon(name: "Polygon" | "MultiPolygon", positionName: string, closed: boolean): Schema {
  const polygonCoordinates: Schema = { type: "array", items: ringOf(positionName), minItems: 1 };
  return {
    type: "object",
    required: ["type", "coordinates"],
    properties: {
      type: { type: "string", enum: [name] },
      coordinates: name === "Polygon" ? polygonCoordinates : { type: "array", items: polygonCoordinates, minItems: 1 },
    },
    additionalProperties: !closed,
  };
}

export const GEOJSON_SCHEMAS: Readonly<Record<string, Schema>> = {
  Position: position(2, "Longitude and latitude in WGS 84 degrees, each the IEEE double sent."),
  InputPosition: position(
    3,
    "Longitude −180..180 and latitude −90..90 in WGS 84 degrees; a third value (altitude) is dropped.",
  ),
  Polygon: polygon("Polygon", "Position", true),
  MultiPolygon: polygon("MultiPolygon", "Position", true),
  Geometry: {
    description:
      "The geometry as it was sent: same type, rings, order and coordinates (altitudes and other members dropped).",
    oneOf: [schemaRef("Polygon"), schemaRef("MultiPolygon")],
  },
  InputPolygon: polygon("Polygon", "InputPosition", false),
  InputMultiPolygon: polygon("MultiPolygon", "InputPosition", false),
  InputGeometry: {
    description:
      "A Polygon or MultiPolygon, valid under OGC Simple Features, at most 100,000 positions, not crossing the antimeridian (docs/api.md §5.4).",
    oneOf: [schemaRef("InputPolygon"), schemaRef("InputMultiPolygon")],
  },
  Point: {
    type: "object",
    required: ["type", "coordinates"],
    properties: { type: { type: "string", enum: ["Point"] }, coordinates: schemaRef("InputPosition") },
  },
  SearchArea: {
    description: "The area a search's records must intersect (touching counts): a Point, Polygon or MultiPolygon.",
    oneOf: [schemaRef("Point"), schemaRef("InputPolygon"), schemaRef("InputMultiPolygon")],
  },
  Link: {
    type: "object",
    required: ["href", "rel"],
    properties: {
      href: { type: "string", description: "Absolute in OGC answers; path-absolute in /sources answers." },
      rel: { type: "string", example: "next" },
      type: { type: "string", example: "application/geo+json" },
      title: { type: "string" },
    },
    additionalProperties: false,
  },
};
