import type { Environment } from "../../model/list-query.js";
import { GEOJSON_CONTENT_TYPE } from "../answer-format.js";
import type { Link } from "../rest-render.js";

/** Where the OGC API – Features adapter lives (docs/api.md §16). */
export const OGC_BASE = "/ogc";

/** The media type of the OpenAPI 3.0 document, as OGC's `service-desc` link names it. */
export const OPENAPI_MEDIA_TYPE = "application/vnd.oai.openapi+json;version=3.0";

/** The coordinate reference system of every geometry: WGS 84 longitude, latitude (RFC 7946). */
export const CRS84 = "http://www.opengis.net/def/crs/OGC/1.3/CRS84";

/**
 * What the adapter implements, and only that: Part 1 Core, GeoJSON and OpenAPI 3.0, and Part 4's
 * create/replace/delete for features, of which it offers create (POST) and delete (DELETE), as
 * the OpenAPI document declares (a source is never replaced: its history keeps it as created).
 */
export const CONFORMANCE_CLASSES = [
  "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core",
  "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson",
  "http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30",
  "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete",
  "http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/features",
] as const;

/** A collection of the adapter: one per environment, each over that environment's ledger. */
export interface OgcCollection {
  id: string;
  environment: Environment;
  title: string;
  description: string;
}

export const OGC_COLLECTIONS: readonly OgcCollection[] = [
  {
    id: "sources",
    environment: "production",
    title: "Sources",
    description:
      "The ledger's sources (fields, facilities, sites, …) visible to the caller, as Polygon and MultiPolygon features.",
  },
  {
    id: "sandbox-sources",
    environment: "sandbox",
    title: "Sandbox sources",
    description: "The caller's sandbox session: sources that are never analysed and expire with the session.",
  },
];

export function ogcCollectionOf(environment: Environment): OgcCollection {
  return OGC_COLLECTIONS.find((c) => c.environment === environment) as OgcCollection;
}

const JSON_TYPE = "application/json";

/** The landing page (OGC API – Features Part 1 §7.2): where everything else is. */
export function landingPage(base: string): object {
  return {
    title: "Source Ledger",
    description:
      "A ledger of geographic sources for environmental-attribute markets, as OGC API – Features. Items need a bearer token.",
    links: [
      { href: `${base}${OGC_BASE}`, rel: "self", type: JSON_TYPE, title: "This document" },
      { href: `${base}/openapi.json`, rel: "service-desc", type: OPENAPI_MEDIA_TYPE, title: "The API definition" },
      { href: `${base}/docs`, rel: "service-doc", type: "text/html", title: "The API documentation" },
      { href: `${base}${OGC_BASE}/conformance`, rel: "conformance", type: JSON_TYPE, title: "Conformance classes" },
      { href: `${base}${OGC_BASE}/collections`, rel: "data", type: JSON_TYPE, title: "The collections" },
    ],
  };
}

export function conformance(): object {
  return { conformsTo: [...CONFORMANCE_CLASSES] };
}

/** One collection's description (Part 1 §7.14); no extent: it would depend on the caller. */
export function collectionDocument(base: string, collection: OgcCollection): object {
  const self = `${base}${OGC_BASE}/collections/${collection.id}`;
  const links: Link[] = [
    { href: self, rel: "self", type: JSON_TYPE, title: collection.title },
    { href: `${self}/items`, rel: "items", type: GEOJSON_CONTENT_TYPE, title: `${collection.title} as GeoJSON` },
  ];
  return {
    id: collection.id,
    title: collection.title,
    description: collection.description,
    itemType: "feature",
    crs: [CRS84],
    storageCrs: CRS84,
    links,
  };
}

export function collectionsDocument(base: string): object {
  return {
    links: [{ href: `${base}${OGC_BASE}/collections`, rel: "self", type: JSON_TYPE, title: "The collections" }],
    collections: OGC_COLLECTIONS.map((collection) => collectionDocument(base, collection)),
  };
}
