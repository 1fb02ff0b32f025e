export { openSqliteProtectedAreaLayers, SqliteProtectedAreaLayers } from "./protected-areas.js";
export { openSqliteStore, SqliteSourceStore, type SqliteStoreOptions } from "./store.js";
