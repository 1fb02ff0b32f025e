import { buildApp } from "./app.js";
import { isLoopbackHost } from "./auth/loopback.js";
import { ConfigError, loadConfig } from "./config.js";
import { limitHeapGrowth } from "./heap.js";
import { createOnePortServerFactory } from "./http/listen.js";

const SHUTDOWN_GRACE_MS = 10_000;

async function main(): Promise<void> {
  limitHeapGrowth();
  const config = loadConfig();
  const onePort = createOnePortServerFactory({ graceMs: SHUTDOWN_GRACE_MS });
  const { app, devIdentity, setListeningAddress } = await buildApp(config, { serverFactory: onePort.serverFactory });
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.port;
  setListeningAddress(config.host === "0.0.0.0" || config.host === "::" ? "127.0.0.1" : config.host, port);
  app.log.info(
    { port, host: config.host, store: config.store },
    `listening on http://${config.host}:${port} (HTTP/1.1 and h2c)`,
  );

  if (devIdentity) {
    if (!isLoopbackHost(config.host)) {
      app.log.warn(
        "DEVELOPMENT IDENTITY PROVIDER IS ON AND THE SERVICE LISTENS BEYOND LOOPBACK: its demo credentials and " +
          "signing key are for local use only. Set AUTH_ISSUER for any real deployment.",
      );
    }
    const demo = devIdentity.demoClient;
    if (demo) {
      // Printed on purpose: this throwaway client exists only so `npm start` alone is usable.
      process.stdout.write(
        `\nDevelopment identity provider: issuer ${devIdentity.issuer()}\n` +
          `  demo client_id:     ${demo.client_id}\n` +
          `  demo client_secret: ${demo.client_secret}\n` +
          `  account_id:         ${demo.account_id}\n` +
          `  audience:           ${config.authAudience}\n\n`,
      );
    }
  }

  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, "shutting down");
    app
      .close()
      .then(() => process.exit(0))
      .catch((error: unknown) => {
        app.log.error({ err: error }, "shutdown failed");
        process.exit(1);
      });
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

main().catch((error: unknown) => {
  const message =
    error instanceof ConfigError
      ? `configuration error: ${error.message}`
      : error instanceof Error
        ? error.stack
        : String(error);
  process.stderr.write(`source-ledger failed to start: ${message}\n`);
  process.exit(1);
});
