/**
 * Why a bearer token was refused. Each value is safe to return to the caller (it names a check,
 * never a claim value) and fits the RFC 6750 `error_description` character set.
 */
export type AuthenticationFailure =
  | "missing bearer token"
  | "authorization scheme must be Bearer"
  | "malformed token"
  | "unsupported algorithm"
  | "unknown signing key"
  | "ambiguous signing key"
  | "signature verification failed"
  | "token expired"
  | "token not yet valid"
  | "unexpected issuer"
  | "unexpected audience"
  | `missing ${ClaimName} claim`
  | `invalid ${ClaimName} claim`;

export type ClaimName =
  | "exp"
  | "nbf"
  | "iat"
  | "sub"
  | "scope"
  | "scp"
  | "permissions"
  | "account_id"
  | "role"
  | "client_name"
  | "v1_client_id";

/** The token is not acceptable: the caller must present another one (401). */
export class AuthenticationError extends Error {
  override name = "AuthenticationError";

  constructor(
    readonly reason: AuthenticationFailure,
    /** The jose error code, for diagnostics; the jose error itself is not kept because it carries the claims. */
    readonly joseCode?: string,
  ) {
    super(reason);
  }
}

/**
 * The signing keys could not be obtained (JWKS unreachable, timed out, or malformed). Not the
 * caller's fault, so it must not be reported as 401: a client would throw away a good token.
 */
export class SigningKeysUnavailableError extends Error {
  override name = "SigningKeysUnavailableError";
  /** Seconds until the keys will next be fetched, when known: the client's Retry-After. */
  readonly retryAfterSeconds: number | undefined;

  constructor(options: { cause?: unknown; retryAfterSeconds?: number } = {}) {
    super("signing keys unavailable", "cause" in options ? { cause: options.cause } : undefined);
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}
