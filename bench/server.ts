/**
 * The service as `npm start` runs it, for the benchmark: src/main.ts's composition (config from
 * the environment, the heap's growth, the one-port HTTP/1.1 + h2c server factory, buildApp, listen), minus the
 * development identity provider's banner. Spawned by the bench (bench/scenarios/fleet.ts) with
 * PORT=0, HOST=127.0.0.1, SQLITE_PATH, AUTH_ISSUER (the bench's JWKS server) and LOG_LEVEL=silent;
 * it reports its port over the IPC channel and exits 0 after a graceful close on SIGTERM, so that
 * `--cpu-prof` writes its profile.
 */
import { buildApp } from "../src/app.js";
import { loadConfig } from "../src/config.js";
import { limitHeapGrowth } from "../src/heap.js";
import { createOnePortServerFactory } from "../src/http/listen.js";

limitHeapGrowth();
const config = loadConfig(process.env);
const onePort = createOnePortServerFactory({ graceMs: 2_000 });
const { app, setListeningAddress } = await buildApp(config, { serverFactory: onePort.serverFactory });
await app.listen({ port: config.port, host: config.host });
const address = app.server.address();
const port = typeof address === "object" && address ? address.port : config.port;
setListeningAddress(config.host, port);
process.send?.({ type: "listening", port });

let closing = false;
const stop = (): void => {
  if (closing) return;
  closing = true;
  app
    .close()
    .then(() => process.exit(0))
    .catch((error: unknown) => {
      process.stderr.write(`bench server: close failed: ${String(error)}\n`);
      process.exit(1);
    });
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
// The parent going away must not leave a server behind.
process.once("disconnect", stop);
