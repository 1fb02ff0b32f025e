/** An RFC 6749 §5.2 error response of the development token endpoint. */
export interface OAuthError {
  status: 400 | 401;
  error: "invalid_request" | "invalid_client" | "unsupported_grant_type" | "invalid_scope" | "invalid_target";
  description?: string;
  /** RFC 6749 §5.2: a client that tried HTTP Basic gets a matching WWW-Authenticate challenge. */
  basicChallenge?: boolean;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; error: OAuthError };

export function invalidRequest(description: string): { ok: false; error: OAuthError } {
  return { ok: false, error: { status: 400, error: "invalid_request", description } };
}
