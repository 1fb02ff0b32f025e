export { openSqliteStore, SqliteSourceStore, type SqliteStoreOptions } from "./store.js";
export { openSqliteProtectedAreaLayers, SqliteProtectedAreaLayers } from "./protected-areas.js";
