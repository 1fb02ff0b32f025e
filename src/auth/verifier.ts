import { errors, type JWTVerifyGetKey, jwtVerify } from "jose";
import type { Principal } from "../model/principal.js";
import { principalFromClaims } from "./claims.js";
import { AuthenticationError, type AuthenticationFailure, SigningKeysUnavailableError } from "./errors.js";
import { PrincipalCache } from "./principal-cache.js";

export { remoteKeys } from "./keys.js";

/** Asymmetric only: accepting HS* would let anyone holding the public key mint tokens. */
const ALGORITHMS: string[] = ["RS256", "ES256"];
const CLOCK_TOLERANCE_SECONDS = 5;
const DEFAULT_CACHE_SIZE = 10_000;
/** Far above any real access token; refusing early keeps oversized input away from base64 and JSON parsing. */
const MAX_TOKEN_LENGTH = 16 * 1024;

export interface TokenVerifierOptions {
  /** A function when the issuer is only known after listen (the development identity provider). */
  issuer: string | (() => string);
  /** Expected `aud`, and the namespace of the custom claims. */
  audience: string;
  keys: JWTVerifyGetKey;
  /** Verified principals kept in memory; 0 disables the cache. */
  cacheSize?: number;
}

/** Resolves to the token's principal, or rejects with AuthenticationError or SigningKeysUnavailableError. */
export type TokenVerifier = (token: string) => Promise<Principal>;

export function createTokenVerifier(options: TokenVerifierOptions): TokenVerifier {
  const expectedIssuer = typeof options.issuer === "string" ? constant(options.issuer) : options.issuer;
  const cache = new PrincipalCache(options.cacheSize ?? DEFAULT_CACHE_SIZE, CLOCK_TOLERANCE_SECONDS);
  // Concurrent first requests with one token share a single verification (and a single JWKS fetch).
  const inFlight = new Map<string, Promise<Principal>>();

  async function verifyUncached(token: string, issuer: string): Promise<Principal> {
    if (token.length > MAX_TOKEN_LENGTH || !hasCanonicalSignature(token))
      throw new AuthenticationError("malformed token");
    try {
      const { payload } = await jwtVerify(token, options.keys, {
        algorithms: ALGORITHMS,
        issuer,
        audience: options.audience,
        requiredClaims: ["exp"],
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
      });
      return principalFromClaims(payload, options.audience);
    } catch (error) {
      throw translate(error);
    }
  }

  return async (token) => {
    const issuer = expectedIssuer();
    const cached = cache.get(token, issuer, nowSeconds());
    if (cached !== undefined) return cached;
    const flightKey = `${issuer} ${token}`;
    const pending = inFlight.get(flightKey);
    if (pending !== undefined) return pending;
    const verification = verifyUncached(token, issuer).then((principal) => {
      cache.set(token, issuer, principal);
      return principal;
    });
    inFlight.set(flightKey, verification);
    try {
      return await verification;
    } finally {
      inFlight.delete(flightKey);
    }
  };
}

/**
 * Whether the signature segment is written as base64url writes its bytes: no padding, no spare bits
 * set. The decoder jose uses on Node 20 ignores both, so one token would otherwise verify under 32
 * spellings, each its own cache entry. (Header and payload are signed as written: any other
 * spelling of them fails the signature.)
 */
function hasCanonicalSignature(token: string): boolean {
  const signature = token.slice(token.lastIndexOf(".") + 1);
  return Buffer.from(signature, "base64url").toString("base64url") === signature;
}

function constant(value: string): () => string {
  return () => value;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * Maps jose's errors to a caller-safe reason. Anything that is not a verdict on the token itself
 * (JWKS timeout, unreachable or malformed key set, key import failure) is a server-side outage.
 */
function translate(error: unknown): AuthenticationError | SigningKeysUnavailableError {
  if (error instanceof AuthenticationError || error instanceof SigningKeysUnavailableError) return error;
  const reason = reasonFor(error);
  if (reason === undefined) return new SigningKeysUnavailableError({ cause: error });
  return new AuthenticationError(reason, error instanceof errors.JOSEError ? error.code : undefined);
}

function reasonFor(error: unknown): AuthenticationFailure | undefined {
  if (error instanceof errors.JWTExpired) return "token expired";
  if (error instanceof errors.JWTClaimValidationFailed) return claimFailure(error);
  if (error instanceof errors.JOSEAlgNotAllowed) return "unsupported algorithm";
  if (error instanceof errors.JWSSignatureVerificationFailed) return "signature verification failed";
  if (error instanceof errors.JWKSNoMatchingKey) return "unknown signing key";
  if (error instanceof errors.JWKSMultipleMatchingKeys) return "ambiguous signing key";
  if (
    error instanceof errors.JWSInvalid ||
    error instanceof errors.JWTInvalid ||
    // Thrown for unrecognised `crit` header extensions, which the token chose.
    error instanceof errors.JOSENotSupported
  ) {
    return "malformed token";
  }
  return undefined;
}

function claimFailure(error: errors.JWTClaimValidationFailed): AuthenticationFailure {
  const missing = error.reason === "missing";
  switch (error.claim) {
    case "iss":
      return "unexpected issuer";
    case "aud":
      return "unexpected audience";
    case "nbf":
      return error.reason === "check_failed" ? "token not yet valid" : "invalid nbf claim";
    case "exp":
      return missing ? "missing exp claim" : "invalid exp claim";
    case "iat":
      return "invalid iat claim";
    default:
      return "malformed token";
  }
}
