import type { DescService } from "@bufbuild/protobuf";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ServerReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** The scopes of docs/api.md §2: what a token may do. */
export type Scope = "read:sources" | "write:sources" | "delete:sources";

export const ALL_SCOPES: readonly Scope[] = ["read:sources", "write:sources", "delete:sources"];

// Keyed by the proto method name, shared by SourceLedgerService and SandboxSourceLedgerService.
const METHOD_SCOPES: ReadonlyMap<string, Scope> = new Map<string, Scope>([
  ["CreateSources", "write:sources"],
  ["ListSources", "read:sources"],
  ["GetSource", "read:sources"],
  ["SearchSources", "read:sources"],
  ["ListSourceEvents", "read:sources"],
  ["ListConflicts", "read:sources"],
  ["DeleteSource", "delete:sources"],
]);

/** The scope a method needs; undefined for a method nobody mapped, which the interceptor refuses. */
export function scopeForMethod(methodName: string): Scope | undefined {
  return METHOD_SCOPES.get(methodName);
}

export function isScope(value: string): value is Scope {
  return (ALL_SCOPES as readonly string[]).includes(value);
}

/**
 * The services anyone may call without a token (docs/api.md §9.9): gRPC health, which load
 * balancers and probes call, and server reflection, which only describes the API. They touch no
 * account's data. This is the one list of exceptions: every other method needs its scope above.
 */
export const PUBLIC_SERVICES: readonly DescService[] = [Health, ServerReflectionV1, ServerReflectionV1alpha];

const PUBLIC_SERVICE_NAMES: ReadonlySet<string> = new Set(PUBLIC_SERVICES.map((service) => service.typeName));

/** Whether a service (by its full name, `package.Service`) is called without a token. */
export function isPublicService(typeName: string): boolean {
  return PUBLIC_SERVICE_NAMES.has(typeName);
}
