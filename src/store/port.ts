import type { BoundingBox, SourceGeometry } from "../geo/types.js";

/** Protected-area overlap of a source, as contract §8 shapes it. */
export interface UnepOverlapRecord {
  dataset: string;
  overlaps: boolean;
  areaM2: number;
  fraction: number;
  areas: { id: string; name: string; designation: string; iucnCategory: string; areaM2: number }[];
}

/** The same overlap with the contract's snake_case keys: the REST body, and the MongoDB document. */
export interface UnepOverlapJson {
  dataset: string;
  overlaps: boolean;
  area_m2: number;
  fraction: number;
  areas: { id: string; name: string; designation: string; iucn_category: string; area_m2: number }[];
}

export function unepOverlapJson(overlap: UnepOverlapRecord): UnepOverlapJson {
  return {
    dataset: overlap.dataset,
    overlaps: overlap.overlaps,
    area_m2: overlap.areaM2,
    fraction: overlap.fraction,
    areas: overlap.areas.map((a) => ({
      id: a.id,
      name: a.name,
      designation: a.designation,
      iucn_category: a.iucnCategory,
      area_m2: a.areaM2,
    })),
  };
}

/** What the service hands a store to insert. Enum-like fields hold the contract's upper-case names. */
export interface NewSourceRecord {
  id: string;
  accountId: string;
  altId: string;
  methodology: string | null;
  tags: string[];
  stewardId: string | null;
  projectId: string | null;
  outcomeReportingYear: number | null;
  sourceType: string | null;
  attributeType: string[];
  geometrySource: string | null;
  geometry: SourceGeometry;
  /** Bounding box of `geometry`, kept in the store's spatial index. */
  bbox: BoundingBox;
  /** Geodesic area of `geometry` in square metres, kept for conflict decisions. */
  areaM2: number;
  /** Epoch milliseconds. */
  startAt: number;
  endAt: number;
  createdBy: string;
  updatedBy: string;
  createdAt: number;
  updatedAt: number;
  conflict: boolean;
  unepOverlap: UnepOverlapRecord | null;
}

/** A stored source. */
export type SourceRecord = Omit<NewSourceRecord, "bbox" | "areaM2"> & {
  /**
   * The geometry's GeoJSON text exactly as stored, when the store keeps it as text: the REST
   * adapter splices it into its answer instead of parsing and serialising it again.
   */
  readonly geometryJson?: string;
};

/** What a conflict decision needs to know of a source (contract §8). */
export interface SpatialSubject {
  geometry: SourceGeometry;
  bbox: BoundingBox;
  areaM2: number;
  startAt: number;
  endAt: number;
  attributeType: readonly string[];
}

/**
 * Decides whether two sources conflict. Stores that do spatial analysis apply it to the
 * candidates their spatial index finds, inside the write's transaction; ledger/conflict.ts
 * implements it so every store applies the same rule.
 */
export interface ConflictPolicy {
  conflicts(a: SpatialSubject, b: SpatialSubject): boolean;
}

/** A protected area of a loaded layer (contract §8), as a store's spatial index hands it over. */
export interface ProtectedArea {
  /** WDPAID, as a string. Parcels of one site share it. */
  id: string;
  name: string;
  designation: string;
  iucnCategory: string;
  geometry: SourceGeometry;
  bbox: BoundingBox;
}

/**
 * Computes a source's `unep_overlap` (contract §8) from the protected areas of the active layer
 * whose bounding boxes meet the source's. Stores that hold a protected-area layer find the
 * candidates with their spatial index and apply it on create; protected-areas/overlap.ts
 * implements it so every store computes the same record. Never throws for geometric reasons
 * (overlay failures fall back to an estimate).
 */
export interface ProtectedAreaPolicy {
  overlap(
    subject: Pick<SpatialSubject, "geometry" | "bbox" | "areaM2">,
    dataset: string,
    candidates: readonly ProtectedArea[],
  ): UnepOverlapRecord;
}

/** A list query. `accountId: null` spans every account (admins only; the service decides). */
export interface ListQuery {
  accountId: string | null;
  methodology?: string;
  stewardId?: string;
  projectId?: string;
  outcomeReportingYear?: number;
  sourceType?: string;
  /** Matches a source having ANY of these; empty means no filter. */
  attributeTypes: string[];
  geometrySource?: string;
  id?: string;
  altId?: string;
  limit: number;
  offset: number;
}

/** Thrown by `insertMany` when alt_ids are already taken in their account; nothing was stored. */
export class AltIdTakenError extends Error {
  constructor(
    readonly accountId: string,
    readonly altIds: string[],
  ) {
    super(`alt_id already in use: ${altIds.join(", ")}`);
    this.name = "AltIdTakenError";
  }
}

/** One account's part of a batch: its alt_ids each once in request order, and those given twice. */
export interface AccountAltIds {
  altIds: string[];
  repeated: Set<string>;
}

/** A batch's alt_ids per account, in request order (every store checks them the same way). */
export function altIdsByAccount(records: readonly NewSourceRecord[]): Map<string, AccountAltIds> {
  const byAccount = new Map<string, { seen: Set<string>; repeated: Set<string> }>();
  for (const { accountId, altId } of records) {
    let account = byAccount.get(accountId);
    if (account === undefined) {
      account = { seen: new Set(), repeated: new Set() };
      byAccount.set(accountId, account);
    }
    if (account.seen.has(altId)) account.repeated.add(altId);
    account.seen.add(altId);
  }
  return new Map([...byAccount].map(([accountId, { seen, repeated }]) => [accountId, { altIds: [...seen], repeated }]));
}

/**
 * The AltIdTakenError for one account's part of a batch, or null: the alt_ids already `stored` or
 * given twice, named in request order, so the caller can point at the offending features.
 */
export function altIdClash(
  accountId: string,
  { altIds, repeated }: AccountAltIds,
  stored: Iterable<string>,
): AltIdTakenError | null {
  const taken = new Set([...stored, ...repeated]);
  return taken.size === 0
    ? null
    : new AltIdTakenError(
        accountId,
        altIds.filter((altId) => taken.has(altId)),
      );
}

/** Thrown when a store would exceed a capacity bound (the sandbox's per-session cap); nothing was stored. */
export class CapacityExceededError extends Error {
  constructor(
    readonly limit: number,
    /** What is counted: "sources", or "positions" for the sandbox's memory bound. */
    readonly unit: "sources" | "positions" = "sources",
  ) {
    super(`capacity of ${limit} ${unit} exceeded`);
    this.name = "CapacityExceededError";
  }
}

/** Thrown when the store cannot be reached; the message is safe to log, never sent to clients. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * The storage port. Every store (embedded SQLite, MongoDB, the sandbox's memory) implements it
 * and passes the same contract suite (test/contract/).
 *
 * Account scoping: `accountId: string` restricts to that account; `null` means any account.
 */
export interface SourceStore {
  /** Inserts all records in one transaction, or none (AltIdTakenError, CapacityExceededError). */
  insertMany(records: NewSourceRecord[]): Promise<SourceRecord[]>;
  /** Records matching the query, ordered by createdAt then id. */
  list(query: ListQuery): Promise<SourceRecord[]>;
  get(id: string, accountId: string | null): Promise<SourceRecord | null>;
  /** True when a record was deleted. */
  deleteById(id: string, accountId: string | null): Promise<boolean>;
  deleteByAltId(altId: string, accountId: string): Promise<boolean>;
  /** Resolves when the store can serve requests; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
