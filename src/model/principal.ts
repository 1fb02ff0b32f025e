/** Who is calling, as established from a verified access token (docs/api.md §2). */
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
