import type { SourceStore } from "./port.js";

/** What a store call is reported as: deletes by id and by alt_id are both "delete". */
export type StoreOperation = "insert" | "list" | "get" | "delete" | "history" | "conflicts";

/** Told each call's operation, its duration in seconds and whether it resolved. */
export type StoreObserver = (operation: StoreOperation, seconds: number, ok: boolean) => void;

/**
 * The same store, each data call timed (for /metrics, docs/api.md §1.3). `ledgerSecret`, `ping` and
 * `close` pass through untimed. Nothing else changes: errors are rethrown as they are.
 */
export function timedStore(store: SourceStore, observe: StoreObserver): SourceStore {
  async function timed<T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> {
    const start = performance.now();
    try {
      const value = await call();
      observe(operation, (performance.now() - start) / 1000, true);
      return value;
    } catch (error) {
      observe(operation, (performance.now() - start) / 1000, false);
      throw error;
    }
  }
  return {
    insertMany: (records) => timed("insert", () => store.insertMany(records)),
    list: (query) => timed("list", () => store.list(query)),
    get: (id, accountId, read) => timed("get", () => store.get(id, accountId, read)),
    getAsOf: (id, accountId, asOf) => timed("get", () => store.getAsOf(id, accountId, asOf)),
    deleteById: (id, accountId, change) => timed("delete", () => store.deleteById(id, accountId, change)),
    deleteByAltId: (altId, accountId, change) => timed("delete", () => store.deleteByAltId(altId, accountId, change)),
    history: (id, accountId, page) => timed("history", () => store.history(id, accountId, page)),
    conflictsOf: (id, accountId, page) => timed("conflicts", () => store.conflictsOf(id, accountId, page)),
    ledgerSecret: () => store.ledgerSecret(),
    ping: () => store.ping(),
    close: () => store.close(),
  };
}
