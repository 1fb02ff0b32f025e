import { createContextKey } from "@connectrpc/connect";

export type Scope = "read:sources" | "write:sources" | "delete:sources";

/** Who is calling, as established from a verified access token. */
export interface Principal {
  /** The token's `sub`. */
  subject: string;
  /** The `<namespace>/account_id` claim; null only for admins without one. */
  accountId: string | null;
  /** The `<namespace>/role` claim, when present. */
  role: string | null;
  isAdmin: boolean;
  /** Union of `scope`, `scp` and `permissions`. */
  scopes: ReadonlySet<string>;
  /** `<namespace>/client_name`, else `sub`: written to created_by and updated_by. */
  actor: string;
  /** Token expiry, epoch seconds. */
  expiresAt: number;
}

/** Set by the authentication interceptor for every authenticated call; read by the service. */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: "authenticated principal",
});
