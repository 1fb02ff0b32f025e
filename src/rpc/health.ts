import { setTimeout as sleep } from "node:timers/promises";
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from "@connectrpc/connect";
import {
  type Health,
  type HealthCheckResponse,
  HealthCheckResponseSchema,
  HealthListResponseSchema,
  HealthCheckResponse_ServingStatus as ServingStatus,
} from "../../gen/grpc/health/v1/health_pb.js";
import { shortened } from "../ledger/preview.js";

export interface HealthOptions {
  /** The names a client may ask about besides "" (the server as a whole): the services served. */
  services: readonly string[];
  /** The server's readiness, the one `/readyz` answers with: resolves when ready, rejects when not. */
  ready: () => Promise<unknown>;
  /** How often a `Watch` asks `ready` again. */
  pollMs: number;
  /** Aborted when the server closes: every `Watch` then ends, its timer with it. */
  closed: AbortSignal;
}

/** Resolves once `signal` is aborted. */
function ended(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

const answer = (status: ServingStatus): HealthCheckResponse => create(HealthCheckResponseSchema, { status });

/**
 * gRPC's health service (grpc.health.v1, docs/api.md §9.9), no token needed: every service the
 * server serves, and the server itself (""), is SERVING while the production store answers its
 * ping (the readiness of `/readyz`) and NOT_SERVING while it does not.
 */
export function createHealthService(options: HealthOptions): ServiceImpl<typeof Health> {
  const known = new Set(["", ...options.services]);
  const current = async (): Promise<ServingStatus> =>
    options.ready().then(
      () => ServingStatus.SERVING,
      () => ServingStatus.NOT_SERVING,
    );

  /** Waits one poll interval: false once the call or the server ended (the timer is cleared then). */
  const waited = async (context: HandlerContext): Promise<boolean> => {
    try {
      await sleep(options.pollMs, undefined, { signal: AbortSignal.any([context.signal, options.closed]) });
      return true;
    } catch {
      return false;
    }
  };

  return {
    async check(request) {
      if (!known.has(request.service)) {
        throw new ConnectError(`unknown service ${shortened(request.service)}`, Code.NotFound);
      }
      return answer(await current());
    },

    async list() {
      const status = await current();
      return create(HealthListResponseSchema, {
        statuses: Object.fromEntries([...known].map((name) => [name, answer(status)])),
      });
    },

    // The current status at once, then each change, until the client cancels or the server closes.
    // An unknown service is SERVICE_UNKNOWN and the call stays open (the set of services is fixed,
    // so it stays unknown).
    async *watch(request, context) {
      if (options.closed.aborted) return;
      if (!known.has(request.service)) {
        yield answer(ServingStatus.SERVICE_UNKNOWN);
        await ended(AbortSignal.any([context.signal, options.closed]));
        return;
      }
      let last = await current();
      yield answer(last);
      while (await waited(context)) {
        const status = await current();
        if (status === last) continue;
        last = status;
        yield answer(status);
      }
    },
  };
}
