export { createSandboxStore, SandboxSourceStore, type SandboxStoreOptions } from "./store.js";
