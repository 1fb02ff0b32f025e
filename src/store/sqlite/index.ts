export { openSqliteStore, SqliteSourceStore, type SqliteStoreOptions } from "./store.js";
