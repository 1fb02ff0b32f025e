// jsts ships generated typings in which nearly everything is `any`; these narrow declarations
// cover only the deep ESM modules src/geo uses, so the compiler checks our calls into them.
// Ambient module declarations take precedence over the package's own typings.

declare module "jsts/org/locationtech/jts/geom/Coordinate.js" {
  export default class Coordinate {
    constructor(x: number, y: number);
    x: number;
    y: number;
  }
}

declare module "jsts/org/locationtech/jts/geom/PrecisionModel.js" {
  export default class PrecisionModel {
    /** A fixed model: coordinates are rounded to multiples of 1 / scale. */
    constructor(scale: number);
  }
}

declare module "jsts/org/locationtech/jts/geom/Geometry.js" {
  import type Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";

  export default interface Geometry {
    getGeometryType(): string;
    getNumGeometries(): number;
    getGeometryN(n: number): Geometry;
    isEmpty(): boolean;
    getCoordinates(): Coordinate[];
  }
}

declare module "jsts/org/locationtech/jts/geom/LinearRing.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";

  export default interface LinearRing extends Geometry {
    readonly __linearRing: never;
  }
}

declare module "jsts/org/locationtech/jts/geom/Polygon.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
  import type LinearRing from "jsts/org/locationtech/jts/geom/LinearRing.js";

  export default interface Polygon extends Geometry {
    getExteriorRing(): LinearRing;
    getNumInteriorRing(): number;
    getInteriorRingN(n: number): LinearRing;
  }
}

declare module "jsts/org/locationtech/jts/geom/MultiPolygon.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";

  export default interface MultiPolygon extends Geometry {
    readonly __multiPolygon: never;
  }
}

declare module "jsts/org/locationtech/jts/geom/GeometryFactory.js" {
  import type Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
  import type LinearRing from "jsts/org/locationtech/jts/geom/LinearRing.js";
  import type MultiPolygon from "jsts/org/locationtech/jts/geom/MultiPolygon.js";
  import type Polygon from "jsts/org/locationtech/jts/geom/Polygon.js";
  import type PrecisionModel from "jsts/org/locationtech/jts/geom/PrecisionModel.js";

  export default class GeometryFactory {
    constructor(precisionModel?: PrecisionModel);
    createLinearRing(coordinates: Coordinate[]): LinearRing;
    createPolygon(shell: LinearRing, holes: LinearRing[]): Polygon;
    createMultiPolygon(polygons: Polygon[]): MultiPolygon;
    createGeometryCollection(geometries: Geometry[]): Geometry;
  }
}

declare module "jsts/org/locationtech/jts/operation/valid/TopologyValidationError.js" {
  import type Coordinate from "jsts/org/locationtech/jts/geom/Coordinate.js";

  export default class TopologyValidationError {
    static readonly ERROR: number;
    static readonly REPEATED_POINT: number;
    static readonly HOLE_OUTSIDE_SHELL: number;
    static readonly NESTED_HOLES: number;
    static readonly DISCONNECTED_INTERIOR: number;
    static readonly SELF_INTERSECTION: number;
    static readonly RING_SELF_INTERSECTION: number;
    static readonly NESTED_SHELLS: number;
    static readonly DUPLICATE_RINGS: number;
    static readonly TOO_FEW_POINTS: number;
    static readonly INVALID_COORDINATE: number;
    static readonly RING_NOT_CLOSED: number;
    getErrorType(): number;
    getMessage(): string;
    getCoordinate(): Coordinate | null;
  }
}

declare module "jsts/org/locationtech/jts/operation/valid/IsValidOp.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
  import type TopologyValidationError from "jsts/org/locationtech/jts/operation/valid/TopologyValidationError.js";

  export default class IsValidOp {
    constructor(geometry: Geometry);
    /** null when the geometry is valid. */
    getValidationError(): TopologyValidationError | null;
  }
}

declare module "jsts/org/locationtech/jts/operation/overlay/OverlayOp.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";

  export default class OverlayOp {
    /** Snaps the inputs together and retries when the plain overlay throws. */
    static intersection(a: Geometry, b: Geometry): Geometry;
  }
}

declare module "jsts/org/locationtech/jts/operation/union/UnaryUnionOp.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";

  export default class UnaryUnionOp {
    static union(geometry: Geometry): Geometry | null;
  }
}

declare module "jsts/org/locationtech/jts/operation/buffer/BufferOp.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";

  export default class BufferOp {
    static bufferOp(geometry: Geometry, distance: number): Geometry;
  }
}

declare module "jsts/org/locationtech/jts/precision/GeometryPrecisionReducer.js" {
  import type Geometry from "jsts/org/locationtech/jts/geom/Geometry.js";
  import type PrecisionModel from "jsts/org/locationtech/jts/geom/PrecisionModel.js";

  export default class GeometryPrecisionReducer {
    /** Rounds to the model's grid, then repairs polygonal topology with buffer(0) if needed. */
    static reduce(geometry: Geometry, precisionModel: PrecisionModel): Geometry;
  }
}
