export { InvalidMongoUriError, REPLICA_SET_REQUIRED } from "./errors.js";
export {
  MongoSourceStore,
  openMongoStore,
  supportsTransactions,
  type MongoSourceStoreOptions,
  type OpenMongoStoreOptions,
} from "./store.js";
