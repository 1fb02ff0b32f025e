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
