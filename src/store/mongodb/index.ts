export { InvalidMongoUriError, REPLICA_SET_REQUIRED } from "./errors.js";
export {
  MongoProtectedAreaLayers,
  type MongoProtectedAreaLayersOptions,
  type OpenMongoProtectedAreaLayersOptions,
  openMongoProtectedAreaLayers,
} from "./protected-areas.js";
export { type BuildMongoIndexesOptions, buildMongoIndexes, type PreparedCollection } from "./setup.js";
export {
  MongoSourceStore,
  type MongoSourceStoreOptions,
  type OpenMongoStoreOptions,
  openMongoStore,
  supportsTransactions,
} from "./store.js";
