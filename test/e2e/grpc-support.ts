/**
 * grpc-js helpers for the gRPC end-to-end tests: the proto loaded with proto-loader (an
 * independent client, not the generated code the server uses), promisified unary calls that keep
 * headers and trailers, a google.rpc.Status decoder for `grpc-status-details-bin`, and source
 * builders in proto-loader's plain-object form.
 */
import { fileURLToPath } from "node:url";
import { fromBinary } from "@bufbuild/protobuf";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { BadRequestSchema } from "../../gen/google/rpc/error_details_pb.js";
import { ring } from "../support/geometry-fixtures.js";

export const PROTO_ROOT = fileURLToPath(new URL("../../proto", import.meta.url));

export const packageDefinition = protoLoader.loadSync("sourceledger/v2/source_ledger.proto", {
  includeDirs: [PROTO_ROOT],
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as {
  sourceledger: { v2: Record<string, grpc.ServiceClientConstructor> };
};

export type ServiceName = "SourceLedgerService" | "SandboxSourceLedgerService";
export type MethodName = "CreateSources" | "ListSources" | "GetSource" | "DeleteSource";
export const METHODS: readonly MethodName[] = ["CreateSources", "ListSources", "GetSource", "DeleteSource"];
export const SERVICES: readonly ServiceName[] = ["SourceLedgerService", "SandboxSourceLedgerService"];

/** What a unary call produced: either a response or an error, always with headers and trailers. */
export interface UnaryOutcome<T = any> {
  code: grpc.status;
  details: string;
  response: T | undefined;
  headers: grpc.Metadata | undefined;
  trailers: grpc.Metadata;
}

export class LedgerGrpc {
  readonly clients: Record<ServiceName, grpc.Client>;

  /** @param options grpc-js channel options (the channel both services share). */
  constructor(port: number, options: grpc.ChannelOptions = {}) {
    const address = `127.0.0.1:${port}`;
    const credentials = grpc.credentials.createInsecure();
    this.clients = {
      SourceLedgerService: new loaded.sourceledger.v2.SourceLedgerService(address, credentials, options),
      // Share one channel between both services.
      SandboxSourceLedgerService: undefined as unknown as grpc.Client,
    };
    const channel = this.clients.SourceLedgerService.getChannel();
    this.clients.SandboxSourceLedgerService = new loaded.sourceledger.v2.SandboxSourceLedgerService(
      address,
      credentials,
      {
        channelOverride: channel,
      },
    );
  }

  /** A unary call that never rejects: the outcome carries status, response, headers and trailers. */
  call<T = any>(
    service: ServiceName,
    method: MethodName,
    request: object,
    token?: string | null,
    extra?: Record<string, string>,
  ): Promise<UnaryOutcome<T>> {
    const metadata = new grpc.Metadata();
    if (token) metadata.add("authorization", `Bearer ${token}`);
    for (const [key, value] of Object.entries(extra ?? {})) metadata.add(key, value);
    const client = this.clients[service] as unknown as Record<string, (...args: any[]) => any>;
    return new Promise((resolve) => {
      let headers: grpc.Metadata | undefined;
      let response: T | undefined;
      let settled = false;
      const call = client[method].call(
        client,
        request,
        metadata,
        { deadline: Date.now() + 60_000 },
        (error: grpc.ServiceError | null, value: T) => {
          response = error ? undefined : value;
        },
      ) as grpc.ClientUnaryCall;
      call.on("metadata", (m: grpc.Metadata) => {
        headers = m;
      });
      call.on("status", (status: grpc.StatusObject) => {
        // The callback runs before "status" in grpc-js; defer one tick to be safe.
        setImmediate(() => {
          if (settled) return;
          settled = true;
          resolve({ code: status.code, details: status.details, response, headers, trailers: status.metadata });
        });
      });
    });
  }

  /** As `call`, but expects OK and returns the response. */
  async ok<T = any>(service: ServiceName, method: MethodName, request: object, token: string): Promise<T> {
    const outcome = await this.call<T>(service, method, request, token);
    if (outcome.code !== grpc.status.OK) {
      throw new Error(`${service}/${method} failed with ${grpc.status[outcome.code]}: ${outcome.details}`);
    }
    return outcome.response as T;
  }

  close(): void {
    this.clients.SandboxSourceLedgerService.close();
    this.clients.SourceLedgerService.close();
  }
}

// --- google.rpc.Status in grpc-status-details-bin, decoded without proto-loader ---

export interface DecodedStatus {
  code: number;
  message: string;
  details: { typeUrl: string; value: Uint8Array }[];
}

/** google.rpc.Status { int32 code = 1; string message = 2; repeated google.protobuf.Any details = 3; } */
export function decodeStatus(bytes: Uint8Array): DecodedStatus {
  const reader = new BinaryReader(bytes);
  const status: DecodedStatus = { code: 0, message: "", details: [] };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) status.code = reader.int32();
    else if (field === 2) status.message = reader.string();
    else if (field === 3) status.details.push(decodeAny(reader.bytes()));
    else reader.skip(wireType);
  }
  return status;
}

/** google.protobuf.Any { string type_url = 1; bytes value = 2; } */
function decodeAny(bytes: Uint8Array): { typeUrl: string; value: Uint8Array } {
  const reader = new BinaryReader(bytes);
  const any: { typeUrl: string; value: Uint8Array } = { typeUrl: "", value: new Uint8Array() };
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    if (field === 1) any.typeUrl = reader.string();
    else if (field === 2) any.value = reader.bytes();
    else reader.skip(wireType);
  }
  return any;
}

/** The status details trailer of a grpc-js outcome, decoded (undefined when absent). */
export function statusDetails(outcome: UnaryOutcome): DecodedStatus | undefined {
  const raw = outcome.trailers.get("grpc-status-details-bin")[0];
  if (raw === undefined) return undefined;
  return decodeStatus(typeof raw === "string" ? Buffer.from(raw, "base64") : raw);
}

/** The type URL of the one field-violation detail the ledger sends (docs/api.md §9.5). */
export const BAD_REQUEST_TYPE_URL = "type.googleapis.com/google.rpc.BadRequest";

/** The field violations of the google.rpc.BadRequest detail of a grpc-js outcome, via the generated schema. */
export function fieldViolations(outcome: UnaryOutcome): { field: string; description: string }[] {
  const status = statusDetails(outcome);
  if (!status) throw new Error(`no grpc-status-details-bin trailer (status ${outcome.code}: ${outcome.details})`);
  const detail = status.details.find((d) => d.typeUrl === BAD_REQUEST_TYPE_URL);
  if (!detail)
    throw new Error(`no google.rpc.BadRequest detail among ${status.details.map((d) => d.typeUrl).join(", ")}`);
  return fromBinary(BadRequestSchema, detail.value).fieldViolations.map((v) => ({
    field: v.field,
    description: v.description,
  }));
}

/** One metadata value from trailers or headers, with where it was found. */
export function metadataValue(
  outcome: UnaryOutcome,
  key: string,
): { in: "trailers" | "headers"; value: string } | undefined {
  const inTrailers = outcome.trailers.get(key)[0];
  if (inTrailers !== undefined) return { in: "trailers", value: String(inTrailers) };
  const inHeaders = outcome.headers?.get(key)[0];
  if (inHeaders !== undefined) return { in: "headers", value: String(inHeaders) };
  return undefined;
}

// --- request builders (proto-loader plain objects) ---

/** A closed square ring, packed lon/lat, with its lower-left corner at (lon, lat). */
export function squareRing(lon: number, lat: number, size = 0.01): { coordinates: number[] } {
  return { coordinates: ring(lon, lat, lon + size, lat + size).flat() };
}

export function polygonGeometry(lon: number, lat: number, size = 0.01): object {
  return { polygon: { rings: [squareRing(lon, lat, size)] } };
}

let counter = 0;

/** A unique, valid geometry far from any other one produced here (avoids conflicts). */
export function uniqueGeometry(): object {
  const n = ++counter;
  return polygonGeometry(-170 + (n % 300) * 0.5, -80 + Math.floor(n / 300) * 0.5 + (n % 7) * 0.05, 0.01);
}

export function ts(iso: string): { seconds: string; nanos: number } {
  const ms = Date.parse(iso);
  return { seconds: String(Math.floor(ms / 1000)), nanos: (ms % 1000) * 1_000_000 };
}

export function sourceInput(altId: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    alt_id: altId,
    geometry: uniqueGeometry(),
    start_at: ts("2024-01-01T00:00:00Z"),
    end_at: ts("2025-01-01T00:00:00Z"),
    ...overrides,
  };
}

let altCounter = 0;
/** An alt_id unique within this process. */
export function uniqueAlt(prefix = "alt"): string {
  return `${prefix}-${process.pid}-${++altCounter}-${Math.random().toString(36).slice(2, 8)}`;
}

export const PRODUCTION_ID = /^src_[0-9A-HJKMNP-TV-Z]{26}$/;
export const SANDBOX_ID = /^sandbox_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export { grpc };
