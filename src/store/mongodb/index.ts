export { InvalidMongoUriError, REPLICA_SET_REQUIRED } from "./errors.js";
export {
  MongoProtectedAreaLayers,
  openMongoProtectedAreaLayers,
  type MongoProtectedAreaLayersOptions,
  type OpenMongoProtectedAreaLayersOptions,
} from "./protected-areas.js";
export {
  MongoSourceStore,
  openMongoStore,
  supportsTransactions,
  type MongoSourceStoreOptions,
  type OpenMongoStoreOptions,
} from "./store.js";
