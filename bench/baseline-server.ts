/**
 * Scenario 1's baseline: a bare Fastify 5 server with JSON routes that return constant bodies of
 * the sizes the service answers (one record; a page of ~100 records), on the service's own paths
 * (`/sources/:id`, `/sources`). The bodies are the service's real answers, captured by
 * bench/scenarios/s1-baselines.ts and passed in BASELINE_BODIES (a JSON file `{ "one": …,
 * "page": … }`). Each route returns the parsed value, so Fastify serialises it on every request,
 * as a plain JSON route does. No auth, no store: the ceiling for this machine, load generator and
 * connection count.
 */
import { readFileSync } from "node:fs";
import Fastify from "fastify";

const bodiesFile = process.env.BASELINE_BODIES;
if (!bodiesFile) throw new Error("BASELINE_BODIES is required");
const bodies = JSON.parse(readFileSync(bodiesFile, "utf8")) as { one: unknown; page: unknown };

const app = Fastify({ logger: false });
app.get("/sources/:id", async () => bodies.one);
app.get("/sources", async () => bodies.page);
await app.listen({ port: 0, host: "127.0.0.1" });
const address = app.server.address();
process.send?.({ type: "listening", port: typeof address === "object" && address ? address.port : 0 });

const stop = (): void => {
  void app.close().then(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
process.once("disconnect", stop);
