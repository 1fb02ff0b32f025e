import type { Geometry, LinearRing, Polygon } from "../../gen/sourceledger/v2/source_ledger_pb.js";
import type { PolygonCoordinates, Position, SourceGeometry } from "../geo/types.js";

/** A packing problem found while unpacking a proto geometry; `path` as in GeometryIssue. */
export interface PackingIssue {
  path: number[];
  detail: string;
}

function unpackPolygon(polygon: Polygon, prefix: number[], issues: PackingIssue[]): PolygonCoordinates {
  return polygon.rings.map((ring, r) => {
    const flat = ring.coordinates;
    if (flat.length % 2 !== 0) {
      issues.push({
        path: [...prefix, r],
        detail: `ring has an odd number of coordinates (${flat.length}); expected packed longitude, latitude pairs`,
      });
    }
    const positions: Position[] = new Array(flat.length >> 1);
    // + 0 turns -0 into 0: every store then holds and answers 0, in every codec (docs/api.md §4.4),
    // as the embedded store's JSON text always did; the sandbox kept -0 for binary answers only.
    for (let i = 0; i < positions.length; i++) positions[i] = [flat[2 * i] + 0, flat[2 * i + 1] + 0];
    return positions;
  });
}

/** Proto geometry → GeoJSON form; null when no kind is set. */
export function geometryFromProto(g: Geometry | undefined): {
  geometry: SourceGeometry | null;
  issues: PackingIssue[];
} {
  const issues: PackingIssue[] = [];
  switch (g?.kind.case) {
    case "polygon":
      return { geometry: { type: "Polygon", coordinates: unpackPolygon(g.kind.value, [], issues) }, issues };
    case "multiPolygon":
      return {
        geometry: {
          type: "MultiPolygon",
          coordinates: g.kind.value.polygons.map((p, i) => unpackPolygon(p, [i], issues)),
        },
        issues,
      };
    default:
      return { geometry: null, issues };
  }
}

function packPolygon(rings: PolygonCoordinates): Polygon {
  return {
    $typeName: "sourceledger.v2.Polygon",
    rings: rings.map((ring): LinearRing => {
      const flat = new Array<number>(ring.length * 2);
      for (let i = 0; i < ring.length; i++) {
        flat[2 * i] = ring[i][0];
        flat[2 * i + 1] = ring[i][1];
      }
      return { $typeName: "sourceledger.v2.LinearRing", coordinates: flat };
    }),
  };
}

/**
 * GeoJSON form → proto geometry, written as the messages themselves rather than through
 * protobuf-es' `create`, which would walk the schema and copy every ring's coordinates once more
 * (rpc/messages.ts says why; test/rpc/messages.test.ts compares the two).
 */
export function geometryToProto(g: SourceGeometry): Geometry {
  return g.type === "Polygon"
    ? { $typeName: "sourceledger.v2.Geometry", kind: { case: "polygon", value: packPolygon(g.coordinates) } }
    : {
        $typeName: "sourceledger.v2.Geometry",
        kind: {
          case: "multiPolygon",
          value: { $typeName: "sourceledger.v2.MultiPolygon", polygons: g.coordinates.map(packPolygon) },
        },
      };
}
