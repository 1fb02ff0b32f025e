/**
 * Shared helpers for the history and explained-conflict end-to-end tests (test/e2e/history-*.test.ts,
 * test/e2e/conflicts-*.test.ts, docs/api.md §14): one client over REST, gRPC (grpc-js with
 * proto-loader) or Connect JSON that creates, reads, lists, searches and deletes sources and reads a
 * source's history and conflicts, answering every protocol in the REST JSON form (events and
 * conflicts normalised, records kept in the protocol's own form) together with the raw text of every
 * response (status, headers, body, trailers) for the privacy scans.
 */
import { afterAll, beforeAll, expect } from "vitest";
import { startTestServer, type TestServer } from "../support/server.js";
import { grpc, LedgerGrpc, type ServiceName, ts, type UnaryOutcome } from "./grpc-support.js";
import { nextLink, tokenOf } from "./paging-support.js";

export type Json = Record<string, any>;
export type Protocol = "rest" | "grpc" | "connect";
export type Env = "production" | "sandbox";
export const PROTOCOLS: readonly Protocol[] = ["rest", "grpc", "connect"];
export const ENVS: readonly Env[] = ["production", "sandbox"];

export type Position = [number, number];
export interface PolygonGeometry {
  type: "Polygon";
  coordinates: Position[][];
}

// ---- sources and geometry ------------------------------------------------------------------------

export const START = "2024-01-01T00:00:00.000Z";
export const END = "2025-01-01T00:00:00.000Z";

/** What a test creates: the fields the explanation depends on. */
export interface SourceSpec {
  alt_id: string;
  geometry: PolygonGeometry;
  start_at?: string;
  end_at?: string;
  attribute_type?: string[];
}

/** A closed counter-clockwise lon/lat rectangle. */
export function box(lon1: number, lat1: number, lon2: number, lat2: number): PolygonGeometry {
  return {
    type: "Polygon",
    coordinates: [
      [
        [lon1, lat1],
        [lon2, lat1],
        [lon2, lat2],
        [lon1, lat2],
        [lon1, lat1],
      ],
    ],
  };
}

let areaSlot = 0;
/**
 * A fresh 1° × 1° area of the earth no other caller of this process gets (conflicts are
 * ledger-wide); `cell(x1, y1, x2, y2)` is a rectangle in it in units of 0.01°.
 */
export function freshArea(): (x1: number, y1: number, x2: number, y2: number) => PolygonGeometry {
  areaSlot += 1;
  const lon = -150 + (areaSlot % 100) * 2;
  const lat = 20 + Math.floor(areaSlot / 100) * 2;
  return (x1, y1, x2, y2) => box(lon + x1 * 0.01, lat + y1 * 0.01, lon + x2 * 0.01, lat + y2 * 0.01);
}

/** The mean-Earth-radius sphere's area of a lon/lat rectangle (docs/api.md §8's model). */
export function rectangleAreaM2(geometry: PolygonGeometry): number {
  const xs = geometry.coordinates[0].map((p) => p[0]);
  const ys = geometry.coordinates[0].map((p) => p[1]);
  const rad = Math.PI / 180;
  const R = 6371008.8;
  const dLon = (Math.max(...xs) - Math.min(...xs)) * rad;
  return R * R * dLon * Math.abs(Math.sin(Math.max(...ys) * rad) - Math.sin(Math.min(...ys) * rad));
}

let uniqueCounter = 0;
/** A name unique within this process. */
export function unique(prefix: string): string {
  uniqueCounter += 1;
  return `${prefix}-${process.pid}-${uniqueCounter}`;
}

// ---- the normalised answers ------------------------------------------------------------------------

export type EventType = "created" | "conflict_set" | "conflict_cleared" | "deleted";

/** An event in the REST form (`record` stays in the protocol's own form; times as toISOString()). */
export interface HistoryEvent {
  seq: number;
  type: EventType;
  at: string;
  by: string | null;
  record?: Json;
  counterpart?: Counterpart;
  overlap_area_m2?: number;
  overlap_area_upper_bound?: true;
  overlap_fraction?: number;
  counterpart_overlap_fraction?: number;
  overlap_period?: { start_at: string; end_at: string };
  shared_attribute_types?: string[];
}

export interface Counterpart {
  id?: string;
  alt_id?: string;
  account_id?: string;
  ref?: string;
}

export interface ExplainedConflict {
  counterpart: Counterpart;
  overlap_area_m2: number;
  /** Only on a pair no overlay could measure (docs/api.md §14). */
  overlap_area_upper_bound?: true;
  overlap_fraction: number;
  counterpart_overlap_fraction: number;
  overlap_period: { start_at: string; end_at: string };
  shared_attribute_types: string[];
  detected_at: string;
}

/** A record in the protocol's form with the members the tests read. */
export interface Created {
  id: string;
  altId: string;
  conflict: boolean;
  native: Json;
}

/** One response as text: what the privacy scans search. */
export interface RawAnswer {
  label: string;
  text: string;
}

/** A failed call: the protocol's status and the error as the caller sees it (without request ids). */
export interface Failure {
  ok: false;
  /** REST: the HTTP status; gRPC: the status code's name; Connect: the HTTP status and code. */
  status: string;
  /** The error's visible content, request-specific parts (request id, instance) removed. */
  signature: string;
}
export type Outcome<T> = { ok: true; value: T } | Failure;

const EXPLANATION_KEYS = [
  "overlap_area_m2",
  "overlap_fraction",
  "counterpart_overlap_fraction",
  "overlap_period",
  "shared_attribute_types",
];

/** docs/api.md §14: the keys a REST event has, by type. */
export const REST_EVENT_KEYS: Record<EventType, string[]> = {
  created: ["seq", "type", "at", "by", "record"],
  conflict_set: ["seq", "type", "at", "by", "counterpart", ...EXPLANATION_KEYS],
  conflict_cleared: ["seq", "type", "at", "by", "counterpart"],
  deleted: ["seq", "type", "at", "by"],
};
export const REST_CONFLICT_KEYS = ["counterpart", ...EXPLANATION_KEYS, "detected_at"];
const UPPER_BOUND = "overlap_area_upper_bound";

/** `keys` as an answer has them: the upper-bound mark after the area when the answer carries it (only as true). */
function withUpperBound(keys: string[], json: Json): string[] {
  if (!(UPPER_BOUND in json)) return keys;
  expect(json[UPPER_BOUND], "overlap_area_upper_bound is present only as true").toBe(true);
  const at = keys.indexOf("overlap_area_m2") + 1;
  return [...keys.slice(0, at), UPPER_BOUND, ...keys.slice(at)];
}

const iso = (value: string) => new Date(value).toISOString();

function tsIso(value: { seconds: string; nanos: number } | null | undefined): string {
  expect(value, "a Timestamp").toBeTruthy();
  return new Date(Number(value!.seconds) * 1000 + Math.round(value!.nanos / 1e6)).toISOString();
}

const stripEnum = (prefix: string, name: string) => {
  expect(name.startsWith(prefix), name).toBe(true);
  return name.slice(prefix.length);
};

// ---- the client ------------------------------------------------------------------------------------

export interface ListOptions {
  conflict?: boolean;
  bbox?: [number, number, number, number];
  /** RFC 3339: the ledger as it stood then (docs/api.md §14). */
  asOf?: string;
}

/**
 * Calls of docs/api.md §3 and §14 over one protocol; every answer's raw text goes to `transcript`.
 * Errors never throw: an `Outcome` carries them.
 */
export class HistoryClient {
  readonly transcript: RawAnswer[] = [];

  constructor(
    readonly server: TestServer,
    readonly rpcClient: LedgerGrpc,
    readonly protocol: Protocol,
  ) {}

  private service(env: Env): ServiceName {
    return env === "production" ? "SourceLedgerService" : "SandboxSourceLedgerService";
  }

  private restPath(env: Env, rest = ""): string {
    return `${env === "sandbox" ? "/sandbox" : ""}/sources${rest}`;
  }

  // --- transport ---

  private async rest(
    label: string,
    method: string,
    path: string,
    token: string,
    json?: unknown,
  ): Promise<{ status: number; body: any; text: string; next: string | null }> {
    const res = await this.server.request(method, path, { token, json });
    const text = await res.text();
    this.transcript.push({
      label: `REST ${method} ${path} (${label})`,
      text: `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${text}`,
    });
    return { status: res.status, body: text === "" ? null : JSON.parse(text), text, next: nextLink(res) };
  }

  private async grpcCall(label: string, env: Env, method: string, request: object, token: string) {
    const outcome: UnaryOutcome = await this.rpcClient.call(this.service(env), method as "GetSource", request, token);
    const metadata = (m: grpc.Metadata | undefined) =>
      m
        ? Object.entries(m.getMap())
            .map(([k, v]) => `${k}: ${Buffer.isBuffer(v) ? v.toString("latin1") : v}`)
            .join("\n")
        : "";
    this.transcript.push({
      label: `gRPC ${this.service(env)}/${method} (${label})`,
      text: `${grpc.status[outcome.code]} ${outcome.details}\n${metadata(outcome.headers)}\n${metadata(
        outcome.trailers,
      )}\n\n${JSON.stringify(outcome.response ?? null)}`,
    });
    return outcome;
  }

  private async connectCall(
    label: string,
    env: Env,
    method: string,
    request: object,
    token: string,
  ): Promise<{ status: number; body: any }> {
    const path = `/sourceledger.v2.${this.service(env)}/${method}`;
    const res = await fetch(`${this.server.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: JSON.stringify(request),
    });
    const text = await res.text();
    this.transcript.push({
      label: `Connect ${path} (${label})`,
      text: `${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join("\n")}\n\n${text}`,
    });
    return { status: res.status, body: text === "" ? null : JSON.parse(text) };
  }

  /** The failure of a REST answer: status and problem without its request-specific `instance`. */
  private restFailure(answer: { status: number; body: any }): Failure {
    const { instance: _instance, ...rest } = answer.body ?? {};
    return { ok: false, status: String(answer.status), signature: JSON.stringify(rest) };
  }

  private grpcFailure(outcome: UnaryOutcome): Failure {
    return { ok: false, status: grpc.status[outcome.code], signature: outcome.details };
  }

  private connectFailure(answer: { status: number; body: any }): Failure {
    return { ok: false, status: `${answer.status} ${answer.body?.code}`, signature: JSON.stringify(answer.body) };
  }

  // --- records ---

  private restInput(spec: SourceSpec): Json {
    return {
      alt_id: spec.alt_id,
      geometry: spec.geometry,
      start_at: spec.start_at ?? START,
      end_at: spec.end_at ?? END,
      attribute_type: spec.attribute_type ?? [],
    };
  }

  private grpcInput(spec: SourceSpec): Json {
    return {
      alt_id: spec.alt_id,
      geometry: { polygon: { rings: spec.geometry.coordinates.map((r) => ({ coordinates: r.flat() })) } },
      start_at: ts(spec.start_at ?? START),
      end_at: ts(spec.end_at ?? END),
      attribute_type: (spec.attribute_type ?? []).map((t) => `ATTRIBUTE_TYPE_${t}`),
    };
  }

  private connectInput(spec: SourceSpec): Json {
    return {
      altId: spec.alt_id,
      geometry: { polygon: { rings: spec.geometry.coordinates.map((r) => ({ coordinates: r.flat() })) } },
      startAt: spec.start_at ?? START,
      endAt: spec.end_at ?? END,
      attributeType: (spec.attribute_type ?? []).map((t) => `ATTRIBUTE_TYPE_${t}`),
    };
  }

  private created(native: Json): Created {
    const altId = this.protocol === "connect" ? native.altId : native.alt_id;
    return { id: native.id, altId, conflict: native.conflict === true, native };
  }

  /** Creates `specs` in one request; the records, or the failure. */
  async tryCreate(token: string, env: Env, specs: SourceSpec[], label = "create"): Promise<Outcome<Created[]>> {
    if (this.protocol === "rest") {
      const body =
        specs.length === 1
          ? this.restInput(specs[0])
          : {
              type: "FeatureCollection",
              features: specs.map((s) => {
                const { alt_id, geometry, ...properties } = this.restInput(s);
                return { type: "Feature", id: alt_id, geometry, properties };
              }),
            };
      const answer = await this.rest(label, "POST", this.restPath(env), token, body);
      if (answer.status !== 201) return this.restFailure(answer);
      return { ok: true, value: (answer.body as Json[]).map((r) => this.created(r)) };
    }
    if (this.protocol === "grpc") {
      const outcome = await this.grpcCall(
        label,
        env,
        "CreateSources",
        { sources: specs.map((s) => this.grpcInput(s)) },
        token,
      );
      if (outcome.code !== grpc.status.OK) return this.grpcFailure(outcome);
      return { ok: true, value: (outcome.response.sources as Json[]).map((r) => this.created(r)) };
    }
    const answer = await this.connectCall(
      label,
      env,
      "CreateSources",
      { sources: specs.map((s) => this.connectInput(s)) },
      token,
    );
    if (answer.status !== 200) return this.connectFailure(answer);
    return { ok: true, value: (answer.body.sources as Json[]).map((r) => this.created(r)) };
  }

  async create(token: string, env: Env, specs: SourceSpec[], label = "create"): Promise<Created[]> {
    const outcome = await this.tryCreate(token, env, specs, label);
    if (!outcome.ok) throw new Error(`create failed: ${outcome.status} ${outcome.signature}`);
    expect(outcome.value).toHaveLength(specs.length);
    return outcome.value;
  }

  async createOne(token: string, env: Env, spec: SourceSpec, label = "create"): Promise<Created> {
    return (await this.create(token, env, [spec], label))[0];
  }

  async get(token: string, env: Env, id: string, label = "get", asOf?: string): Promise<Outcome<Created>> {
    if (this.protocol === "rest") {
      const query = asOf === undefined ? "" : `?as_of=${encodeURIComponent(asOf)}`;
      const answer = await this.rest(label, "GET", this.restPath(env, `/${encodeURIComponent(id)}${query}`), token);
      return answer.status === 200 ? { ok: true, value: this.created(answer.body) } : this.restFailure(answer);
    }
    if (this.protocol === "grpc") {
      const request = asOf === undefined ? { id } : { id, as_of: ts(asOf) };
      const outcome = await this.grpcCall(label, env, "GetSource", request, token);
      return outcome.code === grpc.status.OK
        ? { ok: true, value: this.created(outcome.response.source) }
        : this.grpcFailure(outcome);
    }
    const answer = await this.connectCall(label, env, "GetSource", asOf === undefined ? { id } : { id, asOf }, token);
    return answer.status === 200 ? { ok: true, value: this.created(answer.body.source) } : this.connectFailure(answer);
  }

  /** The conflict flag of a live source (expects it found). */
  async flag(token: string, env: Env, id: string): Promise<boolean> {
    const outcome = await this.get(token, env, id, "flag");
    if (!outcome.ok) throw new Error(`get ${id} failed: ${outcome.status} ${outcome.signature}`);
    return outcome.value.conflict;
  }

  async remove(token: string, env: Env, id: string, label = "delete"): Promise<Outcome<null>> {
    if (this.protocol === "rest") {
      const answer = await this.rest(label, "DELETE", this.restPath(env, `/${encodeURIComponent(id)}`), token);
      return answer.status === 204 ? { ok: true, value: null } : this.restFailure(answer);
    }
    if (this.protocol === "grpc") {
      const outcome = await this.grpcCall(label, env, "DeleteSource", { id }, token);
      return outcome.code === grpc.status.OK ? { ok: true, value: null } : this.grpcFailure(outcome);
    }
    const answer = await this.connectCall(label, env, "DeleteSource", { id }, token);
    return answer.status === 200 ? { ok: true, value: null } : this.connectFailure(answer);
  }

  async removeByAlt(token: string, env: Env, altId: string, label = "delete by alt_id"): Promise<Outcome<null>> {
    if (this.protocol === "rest") {
      const answer = await this.rest(
        label,
        "DELETE",
        this.restPath(env, `?alt_id=${encodeURIComponent(altId)}`),
        token,
      );
      return answer.status === 204 ? { ok: true, value: null } : this.restFailure(answer);
    }
    if (this.protocol === "grpc") {
      const outcome = await this.grpcCall(label, env, "DeleteSource", { alt_id: altId }, token);
      return outcome.code === grpc.status.OK ? { ok: true, value: null } : this.grpcFailure(outcome);
    }
    const answer = await this.connectCall(label, env, "DeleteSource", { altId }, token);
    return answer.status === 200 ? { ok: true, value: null } : this.connectFailure(answer);
  }

  /** A REST GET of any path (GeoJSON lists, OGC API items), recorded like every answer: status and text. */
  async restGet(token: string, path: string, label = path): Promise<{ status: number; text: string }> {
    const { status, text } = await this.rest(label, "GET", path, token);
    return { status, text };
  }

  /** One page of the list (the first), as the records' ids. */
  async list(token: string, env: Env, options: ListOptions = {}, label = "list"): Promise<string[]> {
    if (this.protocol === "rest") {
      const params = new URLSearchParams();
      if (options.conflict !== undefined) params.set("conflict", String(options.conflict));
      if (options.bbox) params.set("bbox", options.bbox.join(","));
      if (options.asOf !== undefined) params.set("as_of", options.asOf);
      const query = params.toString();
      const answer = await this.rest(label, "GET", this.restPath(env, query ? `?${query}` : ""), token);
      expect(answer.status, answer.text).toBe(200);
      return (answer.body as Json[]).map((r) => r.id);
    }
    const bbox = options.bbox
      ? { min_lon: options.bbox[0], min_lat: options.bbox[1], max_lon: options.bbox[2], max_lat: options.bbox[3] }
      : undefined;
    if (this.protocol === "grpc") {
      const request: Json = {};
      if (options.conflict !== undefined) request.conflict = options.conflict;
      if (bbox) request.bbox = bbox;
      if (options.asOf !== undefined) request.as_of = ts(options.asOf);
      const outcome = await this.grpcCall(label, env, "ListSources", request, token);
      expect(outcome.code, outcome.details).toBe(grpc.status.OK);
      return (outcome.response.sources as Json[]).map((r) => r.id);
    }
    const request: Json = {};
    if (options.conflict !== undefined) request.conflict = options.conflict;
    if (bbox) request.bbox = { minLon: bbox.min_lon, minLat: bbox.min_lat, maxLon: bbox.max_lon, maxLat: bbox.max_lat };
    if (options.asOf !== undefined) request.asOf = options.asOf;
    const answer = await this.connectCall(label, env, "ListSources", request, token);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return ((answer.body.sources ?? []) as Json[]).map((r) => r.id);
  }

  /** A search by a polygon (the first page), as the records' ids. */
  async search(token: string, env: Env, area: PolygonGeometry, label = "search"): Promise<string[]> {
    if (this.protocol === "rest") {
      const answer = await this.rest(label, "POST", this.restPath(env, "/search"), token, { intersects: area });
      expect(answer.status, answer.text).toBe(200);
      return (answer.body as Json[]).map((r) => r.id);
    }
    const geometry = { polygon: { rings: area.coordinates.map((r) => ({ coordinates: r.flat() })) } };
    if (this.protocol === "grpc") {
      const outcome = await this.grpcCall(label, env, "SearchSources", { geometry }, token);
      expect(outcome.code, outcome.details).toBe(grpc.status.OK);
      return (outcome.response.sources as Json[]).map((r) => r.id);
    }
    const answer = await this.connectCall(label, env, "SearchSources", { geometry }, token);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return ((answer.body.sources ?? []) as Json[]).map((r) => r.id);
  }

  // --- history and conflicts ---

  /** `GET /sources/{id}/history` or ListSourceEvents, normalised to the REST form. */
  async history(token: string, env: Env, id: string, label = "history"): Promise<Outcome<HistoryEvent[]>> {
    const page = await this.sourcePage("history", token, env, id, label);
    return page.ok ? { ok: true, value: page.value.items } : page;
  }

  /** The history, expected found. */
  async events(token: string, env: Env, id: string, label = "history"): Promise<HistoryEvent[]> {
    const outcome = await this.history(token, env, id, label);
    if (!outcome.ok) throw new Error(`history of ${id} failed: ${outcome.status} ${outcome.signature}`);
    return outcome.value;
  }

  /** `GET /sources/{id}/conflicts` or ListConflicts, normalised to the REST form. */
  async conflicts(token: string, env: Env, id: string, label = "conflicts"): Promise<Outcome<ExplainedConflict[]>> {
    const page = await this.sourcePage("conflicts", token, env, id, label);
    return page.ok ? { ok: true, value: page.value.items } : page;
  }

  /**
   * One page of a source's history or conflicts (the first, or the one `page.next` names),
   * normalised to the REST form, with what names the next page ("" after the last): over REST the
   * target of the answer's `Link: rel="next"`, over gRPC and Connect its `next_page_token`. Every
   * answer is in the transcript.
   */
  private async sourcePage<T extends "history" | "conflicts">(
    what: T,
    token: string,
    env: Env,
    id: string,
    label: string,
    page?: { limit: number; next: string },
  ): Promise<Outcome<{ items: PageItem<T>[]; next: string }>> {
    const field = what === "history" ? "events" : "conflicts";
    const method = what === "history" ? "ListSourceEvents" : "ListConflicts";
    const convert = PAGE_ITEMS[what][this.protocol] as (json: Json) => PageItem<T>;
    if (this.protocol === "rest") {
      // Later pages follow the server's own Link target as given.
      const first = this.restPath(
        env,
        `/${encodeURIComponent(id)}/${what}${page === undefined ? "" : `?limit=${page.limit}`}`,
      );
      const answer = await this.rest(label, "GET", page?.next ? page.next : first, token);
      if (answer.status !== 200) return this.restFailure(answer);
      expect(Array.isArray(answer.body)).toBe(true);
      return { ok: true, value: { items: (answer.body as Json[]).map(convert), next: answer.next ?? "" } };
    }
    if (this.protocol === "grpc") {
      const request = page === undefined ? { id } : { id, limit: page.limit, page_token: page.next };
      const outcome = await this.grpcCall(label, env, method, request, token);
      if (outcome.code !== grpc.status.OK) return this.grpcFailure(outcome);
      const items = (outcome.response[field] as Json[]).map(convert);
      return { ok: true, value: { items, next: outcome.response.next_page_token as string } };
    }
    const request = page === undefined ? { id } : { id, limit: page.limit, pageToken: page.next };
    const answer = await this.connectCall(label, env, method, request, token);
    if (answer.status !== 200) return this.connectFailure(answer);
    const items = ((answer.body[field] ?? []) as Json[]).map(convert);
    return { ok: true, value: { items, next: (answer.body.nextPageToken ?? "") as string } };
  }

  /**
   * The page of a source's history or conflicts that `pageToken` names, as a caller holding that
   * token asks for it (REST: `?limit=…&page_token=…`), with the next page's token ("" after the last).
   */
  async pageAt<T extends "history" | "conflicts">(
    token: string,
    env: Env,
    id: string,
    what: T,
    limit: number,
    pageToken: string,
  ): Promise<Outcome<{ items: PageItem<T>[]; nextToken: string }>> {
    const rest = this.restPath(env, `/${encodeURIComponent(id)}/${what}?limit=${limit}&page_token=${pageToken}`);
    const page = await this.sourcePage(what, token, env, id, `${what} at a token`, {
      limit,
      next: this.protocol === "rest" ? rest : pageToken,
    });
    if (!page.ok) return page;
    const { items, next } = page.value;
    return { ok: true, value: { items, nextToken: this.protocol === "rest" && next !== "" ? tokenOf(next) : next } };
  }

  /** Every page of a source's history (`what` "history") or conflicts, `limit` a page, expected found. */
  async walk<T extends "history" | "conflicts">(
    token: string,
    env: Env,
    id: string,
    what: T,
    limit: number,
  ): Promise<PageItem<T>[][]> {
    const pages: PageItem<T>[][] = [];
    let next = "";
    do {
      const page = await this.sourcePage(what, token, env, id, what, { limit, next });
      if (!page.ok) throw new Error(`${what} of ${id}: ${page.status} ${page.signature}`);
      pages.push(page.value.items);
      next = page.value.next;
      if (pages.length > 1_000) throw new Error("the walk does not end");
    } while (next !== "");
    return pages;
  }

  /** The conflicts, expected found. */
  async conflictList(token: string, env: Env, id: string, label = "conflicts"): Promise<ExplainedConflict[]> {
    const outcome = await this.conflicts(token, env, id, label);
    if (!outcome.ok) throw new Error(`conflicts of ${id} failed: ${outcome.status} ${outcome.signature}`);
    return outcome.value;
  }

  /** The protocol's not-found status. */
  get notFound(): string {
    return this.protocol === "rest" ? "404" : this.protocol === "grpc" ? "NOT_FOUND" : "404 not_found";
  }
}

// ---- normalisation -----------------------------------------------------------------------------------

/** A REST event, its keys checked against docs/api.md §14. */
function restEvent(json: Json): HistoryEvent {
  expect(Object.keys(REST_EVENT_KEYS), `event type ${json.type}`).toContain(json.type);
  // A deleted sandbox source's `created` event keeps no record (docs/api.md §14); the tests say when.
  const keys = REST_EVENT_KEYS[json.type as EventType].filter((k) => k !== "record" || "record" in json);
  expect(Object.keys(json), JSON.stringify(json)).toEqual(withUpperBound(keys, json));
  expect(json.at, "at is RFC 3339 in UTC with milliseconds").toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  const event: HistoryEvent = { ...json, at: iso(json.at) } as HistoryEvent;
  if (json.overlap_period) {
    event.overlap_period = { start_at: iso(json.overlap_period.start_at), end_at: iso(json.overlap_period.end_at) };
  }
  return event;
}

function restConflict(json: Json): ExplainedConflict {
  expect(Object.keys(json), JSON.stringify(json)).toEqual(withUpperBound(REST_CONFLICT_KEYS, json));
  return {
    ...(json as ExplainedConflict),
    overlap_period: { start_at: iso(json.overlap_period.start_at), end_at: iso(json.overlap_period.end_at) },
    detected_at: iso(json.detected_at),
  };
}

const COUNTERPART_FIELDS = ["id", "alt_id", "account_id", "ref"] as const;

/** A proto-loader Counterpart: only the optional fields that are set (`_<name>` names them). */
function grpcCounterpart(json: Json): Counterpart {
  const counterpart: Counterpart = {};
  for (const field of COUNTERPART_FIELDS) {
    if (json[`_${field}`] === field) counterpart[field] = json[field];
    else expect(json[field] ?? undefined, `unset ${field}`).toBeUndefined();
  }
  return counterpart;
}

function grpcExplanation(json: Json) {
  return {
    overlap_area_m2: json.overlap_area_m2,
    ...(json.overlap_area_upper_bound === true ? { overlap_area_upper_bound: true as const } : {}),
    overlap_fraction: json.overlap_fraction,
    counterpart_overlap_fraction: json.counterpart_overlap_fraction,
    overlap_period: { start_at: tsIso(json.overlap_period.start_at), end_at: tsIso(json.overlap_period.end_at) },
    shared_attribute_types: (json.shared_attribute_types as string[]).map((t) => stripEnum("ATTRIBUTE_TYPE_", t)),
  };
}

function grpcEvent(json: Json): HistoryEvent {
  const type = stripEnum("SOURCE_EVENT_TYPE_", json.type).toLowerCase() as EventType;
  const event: HistoryEvent = {
    seq: json.seq,
    type,
    at: tsIso(json.at),
    by: json._by === "by" ? json.by : null,
  };
  if (json._by !== "by") expect(json.by ?? undefined, "an unset by").toBeUndefined();
  if (type !== "created") expect(json.source, `source on ${type}`).toBeNull();
  expect(json.counterpart !== null, `counterpart set on ${type}`).toBe(type.startsWith("conflict_"));
  expect(json.explanation !== null, `explanation set on ${type}`).toBe(type === "conflict_set");
  if (json.source) event.record = json.source;
  if (json.counterpart) event.counterpart = grpcCounterpart(json.counterpart);
  if (json.explanation) Object.assign(event, grpcExplanation(json.explanation));
  return event;
}

function grpcConflict(json: Json): ExplainedConflict {
  return {
    counterpart: grpcCounterpart(json.counterpart),
    ...grpcExplanation(json.explanation),
    detected_at: tsIso(json.detected_at),
  };
}

function connectCounterpart(json: Json): Counterpart {
  const names: Record<string, (typeof COUNTERPART_FIELDS)[number]> = {
    id: "id",
    altId: "alt_id",
    accountId: "account_id",
    ref: "ref",
  };
  const counterpart: Counterpart = {};
  for (const [key, value] of Object.entries(json)) {
    expect(Object.keys(names), `Counterpart member ${key}`).toContain(key);
    counterpart[names[key]] = value as string;
  }
  return counterpart;
}

function connectExplanation(json: Json) {
  expect(json.overlapAreaUpperBound ?? true, "overlapAreaUpperBound is present only as true").toBe(true);
  return {
    overlap_area_m2: json.overlapAreaM2 ?? 0,
    ...(json.overlapAreaUpperBound === true ? { overlap_area_upper_bound: true as const } : {}),
    overlap_fraction: json.overlapFraction ?? 0,
    counterpart_overlap_fraction: json.counterpartOverlapFraction ?? 0,
    overlap_period: { start_at: iso(json.overlapPeriod.startAt), end_at: iso(json.overlapPeriod.endAt) },
    shared_attribute_types: ((json.sharedAttributeTypes ?? []) as string[]).map((t) => stripEnum("ATTRIBUTE_TYPE_", t)),
  };
}

function connectEvent(json: Json): HistoryEvent {
  const type = stripEnum("SOURCE_EVENT_TYPE_", json.type).toLowerCase() as EventType;
  const event: HistoryEvent = { seq: json.seq, type, at: iso(json.at), by: json.by ?? null };
  if (type !== "created") expect("source" in json, `source on ${type}`).toBe(false);
  expect("counterpart" in json, `counterpart set on ${type}`).toBe(type.startsWith("conflict_"));
  expect("explanation" in json, `explanation set on ${type}`).toBe(type === "conflict_set");
  if (json.source) event.record = json.source;
  if (json.counterpart) event.counterpart = connectCounterpart(json.counterpart);
  if (json.explanation) Object.assign(event, connectExplanation(json.explanation));
  return event;
}

function connectConflict(json: Json): ExplainedConflict {
  return {
    counterpart: connectCounterpart(json.counterpart),
    ...connectExplanation(json.explanation),
    detected_at: iso(json.detectedAt),
  };
}

// ---- assertions ----------------------------------------------------------------------------------

/** The explanation members of an event or conflict (without counterpart, times, seq). */
export function explanationOf(value: HistoryEvent | ExplainedConflict) {
  return {
    overlap_area_m2: value.overlap_area_m2,
    ...(value.overlap_area_upper_bound === true ? { overlap_area_upper_bound: true as const } : {}),
    overlap_fraction: value.overlap_fraction,
    counterpart_overlap_fraction: value.counterpart_overlap_fraction,
    overlap_period: value.overlap_period,
    shared_attribute_types: [...(value.shared_attribute_types ?? [])].sort(),
  };
}

/** Types and seqs of a history, for compact comparisons: `["1 created", "2 conflict_set", …]`. */
export function outline(events: readonly HistoryEvent[]): string[] {
  return events.map((e) => `${e.seq} ${e.type}`);
}

/** A relative closeness check for measured areas and fractions. */
export function expectClose(actual: number | undefined, expected: number, relative = 1e-6, what = "value"): void {
  expect(typeof actual, what).toBe("number");
  expect(Math.abs((actual as number) - expected), `${what}: ${actual} vs ${expected}`).toBeLessThanOrEqual(
    Math.abs(expected) * relative,
  );
}

/** An item of a source's history or conflicts, normalised to the REST form. */
type PageItem<T extends "history" | "conflicts"> = T extends "history" ? HistoryEvent : ExplainedConflict;

/** Each protocol's answer items, normalised to the REST form. */
const PAGE_ITEMS = {
  history: { rest: restEvent, grpc: grpcEvent, connect: connectEvent },
  conflicts: { rest: restConflict, grpc: grpcConflict, connect: connectConflict },
} as const;

/** The `created_at` of a record in the protocol's form, as toISOString(). */
export function createdAtOf(protocol: Protocol, record: Json): string {
  if (protocol === "rest") return iso(record.created_at);
  if (protocol === "grpc") return tsIso(record.created_at);
  return iso(record.createdAt);
}

/** Every needle found in the transcript, as "needle in label". */
export function leaks(transcript: readonly RawAnswer[], needles: readonly string[]): string[] {
  const found: string[] = [];
  for (const answer of transcript) {
    for (const needle of needles) {
      if (answer.text.includes(needle)) found.push(`${JSON.stringify(needle)} in ${answer.label}`);
    }
  }
  return found;
}

/**
 * Strings that stand for each coordinate of `geometry` as a server might print it: the full
 * value and its roundings to 4–10 decimals.
 */
export function coordinateNeedles(geometry: PolygonGeometry): string[] {
  const values = new Set(geometry.coordinates.flat(2));
  const needles = new Set<string>();
  for (const value of values) {
    needles.add(String(value));
    for (let digits = 4; digits <= 10; digits++) needles.add(value.toFixed(digits));
  }
  return [...needles];
}

/**
 * One server for a test file (with `env` added to its configuration), with a HistoryClient per
 * protocol: started before its tests, closed after them.
 */
export interface HistoryServer {
  server: TestServer;
  rpc: LedgerGrpc;
  clients: Record<Protocol, HistoryClient>;
}

export function useHistoryServer(env: Record<string, string> = {}): HistoryServer {
  const shared = { clients: {} } as HistoryServer;
  beforeAll(async () => {
    shared.server = await startTestServer(env);
    shared.rpc = new LedgerGrpc(shared.server.port);
    for (const protocol of PROTOCOLS) shared.clients[protocol] = new HistoryClient(shared.server, shared.rpc, protocol);
  });
  afterAll(async () => {
    shared.rpc?.close();
    await shared.server?.close();
  });
  return shared;
}
