import type { DescService } from "@bufbuild/protobuf";
import type { ConnectRouter } from "@connectrpc/connect";
import { file_google_rpc_error_details } from "../../gen/google/rpc/error_details_pb.js";
import { Health } from "../../gen/grpc/health/v1/health_pb.js";
import { ServerReflection as ServerReflectionV1 } from "../../gen/grpc/reflection/v1/reflection_pb.js";
import { ServerReflection as ServerReflectionV1alpha } from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import { PUBLIC_SERVICES } from "../auth/scopes.js";
import { createHealthService } from "./health.js";
import { createReflection, createReflectionServices } from "./reflection.js";

/** How often a health `Watch` asks the readiness again, unless told otherwise. */
export const HEALTH_WATCH_POLL_MS = 5_000;

export interface PublicServiceOptions {
  /** The API's services (both ledgers): health and reflection answer about them and themselves. */
  api: readonly DescService[];
  /** The server's readiness, as `/readyz` checks it: resolves when ready, rejects when not. */
  ready: () => Promise<unknown>;
  /** Health `Watch` poll interval (ms). */
  pollMs?: number;
  /** Aborted when the server closes (ends every health `Watch`). */
  closed: AbortSignal;
}

/**
 * Registers gRPC health (grpc.health.v1) and server reflection (grpc.reflection.v1 and v1alpha)
 * next to the API's services (docs/api.md §9.9). They need no token: auth/scopes.ts lists them as
 * public.
 */
export function registerPublicServices(router: ConnectRouter, options: PublicServiceOptions): void {
  const all = [...options.api, ...PUBLIC_SERVICES];
  router.service(
    Health,
    createHealthService({
      services: all.map((service) => service.typeName),
      ready: options.ready,
      pollMs: options.pollMs ?? HEALTH_WATCH_POLL_MS,
      closed: options.closed,
    }),
  );
  // The error-detail types ride along, so a client can decode `grpc-status-details-bin` by reflection.
  const reflection = createReflectionServices(createReflection(all, [file_google_rpc_error_details]));
  router.service(ServerReflectionV1, reflection.v1);
  router.service(ServerReflectionV1alpha, reflection.v1alpha);
}
