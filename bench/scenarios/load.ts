/** One scenario's load against a server: autocannon for REST, the h2 client for gRPC. */
import { runGrpcLoad } from "../grpc-load.js";
import { type LoadResult, runHttpLoad } from "../http-load.js";
import type { Plan } from "./options.js";
import { createBody } from "./s4-create.js";
import type { LoadKind } from "./types.js";

export const LIST_PATH = "/sources?source_type=FIELD&limit=100";

export function shuffled<T>(items: readonly T[], seed = 42): T[] {
  const out = [...items];
  let state = seed;
  const random = () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

export async function runLoad(
  plan: Plan,
  port: number,
  load: LoadKind,
  token: string,
  duration: number,
): Promise<LoadResult> {
  const headers = { authorization: `Bearer ${token}` };
  switch (load.kind) {
    case "grpc":
      return runGrpcLoad({
        client: load.client,
        port,
        token,
        ids: load.ids,
        concurrency: plan.grpcConcurrency,
        connections: plan.grpcConnections,
        duration,
        acceptCompression: load.acceptCompression,
        method: load.method,
        windowBytes: load.windowBytes,
      });
    case "get": {
      let i = 0;
      const { ids } = load;
      return runHttpLoad({
        port,
        duration,
        connections: plan.connections,
        headers,
        requests: [{ method: "GET", setupRequest: (r) => ({ ...r, path: `/sources/${ids[i++ % ids.length]}` }) }],
      });
    }
    case "list":
      return runHttpLoad({
        port,
        duration,
        connections: plan.connections,
        headers,
        requests: [{ method: "GET", path: LIST_PATH }],
      });
    case "paths": {
      let i = 0;
      const { paths } = load;
      return runHttpLoad({
        port,
        duration,
        connections: load.connections ?? plan.connections,
        headers,
        requests: [{ method: "GET", setupRequest: (r) => ({ ...r, path: paths[i++ % paths.length] }) }],
      });
    }
    case "search": {
      let i = 0;
      const { bodies } = load;
      return runHttpLoad({
        port,
        duration,
        connections: load.connections ?? plan.connections,
        headers: { ...headers, "content-type": "application/json" },
        requests: [
          {
            method: "POST",
            path: "/sources/search",
            setupRequest: (r) => ({ ...r, body: bodies[i++ % bodies.length] }),
          },
        ],
      });
    }
    case "create": {
      const { features, conflictsIn } = load;
      return runHttpLoad({
        port,
        duration,
        connections: features > 1 ? plan.batchConnections : plan.connections,
        headers: { ...headers, "content-type": "application/json" },
        requests: [
          {
            method: "POST",
            path: "/sources",
            setupRequest: (r) => ({ ...r, body: createBody(features, conflictsIn) }),
          },
        ],
      });
    }
  }
}
