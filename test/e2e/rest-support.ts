/**
 * Shared helpers for the REST end-to-end tests (test/e2e/rest-*.test.ts): body builders, record
 * and problem-details assertions. Every test file starts its own server with startTestServer().
 */
import { expect } from "vitest";
import { ring } from "../support/geometry-fixtures.js";
import type { TestServer } from "../support/server.js";

export type Json = Record<string, unknown>;
export type Position = number[];
export type Ring = Position[];

/** docs/api.md §4: every key of a record, in the contract's order. */
export const RECORD_KEYS = [
  "id",
  "alt_id",
  "methodology",
  "tags",
  "steward_id",
  "project_id",
  "outcome_reporting_year",
  "source_type",
  "attribute_type",
  "geometry_source",
  "geometry",
  "start_at",
  "end_at",
  "account_id",
  "created_by",
  "updated_by",
  "created_at",
  "updated_at",
  "conflict",
  "unep_overlap",
] as const;

export const PROBLEM_KEYS = ["type", "title", "status", "detail", "instance", "code", "errors"];

export const PRODUCTION_ID = /^src_[0-9A-HJKMNP-TV-Z]{26}$/;
export const SANDBOX_ID = /^sandbox_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
export const UTC_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export const START = "2024-01-01T00:00:00Z";
export const END = "2025-01-01T00:00:00Z";

export type Environment = "production" | "sandbox";
export const ENVIRONMENTS: readonly Environment[] = ["production", "sandbox"];

/** `/sources` or `/sandbox/sources`, plus `rest`. */
export function pathOf(env: Environment, rest = ""): string {
  return `${env === "sandbox" ? "/sandbox" : ""}/sources${rest}`;
}

/** A closed, counter-clockwise square ring with its south-west corner at (x, y). */
export function square(x = 0, y = 0, d = 1): Ring {
  return ring(x, y, x + d, y + d);
}

export function polygon(x = 0, y = 0, d = 1): Json {
  return { type: "Polygon", coordinates: [square(x, y, d)] };
}

let cell = 0;
/**
 * A 0.001° square in a 0.01° grid cell of its own (near 165° W, 40° N, away from the hand-written
 * geometries of the tests): sources made from it never overlap, so production's spatial analysis
 * (docs/api.md §8, ledger-wide) never links them, and a record read back later equals the one created.
 */
export function freshPolygon(): Json {
  const c = cell++;
  return polygon(-170 + (c % 1000) * 0.01, 40 + Math.floor(c / 1000) * 0.01, 0.001);
}

/** A flat source body (shape 3), by default with a fresh geometry. */
export function flat(altId: string, extra: Json = {}): Json {
  return { alt_id: altId, geometry: freshPolygon(), start_at: START, end_at: END, ...extra };
}

/** A Feature with `id` = altId and the required times in `properties`. */
export function feature(altId: string | undefined, properties: Json = {}, geometry: unknown = freshPolygon()): Json {
  const f: Json = { type: "Feature", geometry, properties: { start_at: START, end_at: END, ...properties } };
  if (altId !== undefined) f.id = altId;
  return f;
}

export function collection(features: unknown[], extra: Json = {}): Json {
  return { type: "FeatureCollection", features, ...extra };
}

/** `n` valid features `${prefix}-0` …, none touching another. */
export function manyFeatures(prefix: string, n: number, properties: Json = {}): Json[] {
  return Array.from({ length: n }, (_, i) => feature(`${prefix}-${i}`, properties));
}

let counter = 0;
/** A fresh alt_id / account name, unique within the test process. */
export function unique(prefix: string): string {
  counter += 1;
  return `${prefix}-${process.pid}-${counter}`;
}

/** Asserts a problem+json response with exactly the docs/api.md §6 keys; returns the body. */
export async function expectProblem(
  res: Response,
  status: number,
  code: string,
): Promise<{
  type: string;
  title: string;
  status: number;
  detail: string;
  instance: string;
  code: string;
  errors: { pointer: string; detail: string }[];
}> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/problem\+json(;|$)/);
  const body = JSON.parse(text);
  expect(Object.keys(body).sort()).toEqual([...PROBLEM_KEYS].sort());
  expect(body.status).toBe(status);
  expect(body.code).toBe(code);
  expect(typeof body.type).toBe("string");
  expect(typeof body.title).toBe("string");
  expect(body.title.length).toBeGreaterThan(0);
  expect(typeof body.detail).toBe("string");
  expect(body.detail.length).toBeGreaterThan(0);
  expect(Array.isArray(body.errors)).toBe(true);
  for (const error of body.errors) expect(Object.keys(error).sort()).toEqual(["detail", "pointer"]);
  return body;
}

/** A 422 with exactly one field error at `pointer` whose detail contains `detail`. */
export async function expectViolation(res: Response, pointer: string, detail: string | RegExp): Promise<void> {
  const body = await expectProblem(res, 422, "invalid_argument");
  expect(body.errors, JSON.stringify(body.errors)).toHaveLength(1);
  expect(body.errors[0].pointer).toBe(pointer);
  if (typeof detail === "string") expect(body.errors[0].detail).toContain(detail);
  else expect(body.errors[0].detail).toMatch(detail);
  expect(body.detail).toContain(body.errors[0].detail);
}

/** Asserts a JSON response with `status` and returns the parsed body. */
export async function expectJson<T = unknown>(res: Response, status: number): Promise<T> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json(;|$)/);
  return JSON.parse(text) as T;
}

export type SourceRecord = Json & {
  id: string;
  alt_id: string;
  account_id: string;
  tags: string[];
  attribute_type: string[];
  geometry: Json;
  created_at: string;
};

/** A record with exactly the contract's keys and well-formed generated values. */
export function expectRecord(record: unknown, env: Environment): asserts record is SourceRecord {
  expect(record).toBeTypeOf("object");
  const r = record as Json;
  expect(Object.keys(r)).toEqual([...RECORD_KEYS]);
  expect(r.id).toMatch(env === "production" ? PRODUCTION_ID : SANDBOX_ID);
  for (const key of ["start_at", "end_at", "created_at", "updated_at"]) expect(r[key]).toMatch(UTC_MILLIS);
  expect(r.updated_at).toBe(r.created_at);
  expect(Array.isArray(r.tags)).toBe(true);
  expect(Array.isArray(r.attribute_type)).toBe(true);
  // Production's conflict is spatial analysis (docs/api.md §8, not tested here): a boolean. The
  // sandbox never analyses; no protected-area layer is loaded in these tests.
  if (env === "sandbox") expect(r.conflict).toBe(false);
  else expect(typeof r.conflict).toBe("boolean");
  expect(r.unep_overlap).toBeNull();
}

/** POST a body, expect 201 and well-formed records; returns them. */
export async function createOk(
  server: TestServer,
  token: string,
  body: unknown,
  env: Environment = "production",
  query = "",
): Promise<SourceRecord[]> {
  const records = await expectJson<unknown[]>(
    await server.request("POST", pathOf(env, query), { token, json: body }),
    201,
  );
  expect(Array.isArray(records)).toBe(true);
  for (const record of records) expectRecord(record, env);
  return records as SourceRecord[];
}

/** GET the list with a query string (without `?`), expect 200; returns the records. */
export async function list(
  server: TestServer,
  token: string,
  query = "",
  env: Environment = "production",
): Promise<SourceRecord[]> {
  const records = await expectJson<SourceRecord[]>(
    await server.request("GET", pathOf(env, query ? `?${query}` : ""), { token }),
    200,
  );
  expect(Array.isArray(records)).toBe(true);
  return records;
}

/** Records in list order (docs/api.md §4): created_at, then id. */
export function inListOrder<T extends { created_at: string; id: string }>(records: T[]): T[] {
  const key = (r: T) => [r.created_at, r.id] as const;
  return [...records].sort((a, b) => {
    const [ca, ia] = key(a);
    const [cb, ib] = key(b);
    if (ca !== cb) return ca < cb ? -1 : 1;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  });
}

export function altIds(records: { alt_id: string }[]): string[] {
  return records.map((r) => r.alt_id);
}
