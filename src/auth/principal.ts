import { createContextKey } from "@connectrpc/connect";
import type { Principal } from "../model/principal.js";

/** Set by the authentication interceptor for every authenticated call; read by the rpc adapter. */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: "authenticated principal",
});
