import { createLocalJWKSet, createRemoteJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";

export interface RemoteKeysOptions {
  /** Abort a JWKS fetch after this long; a hanging identity provider must not hang every request. */
  timeoutMs?: number;
  /** Minimum time between refetches triggered by an unknown `kid`, so forged kids cannot flood the issuer. */
  cooldownMs?: number;
  /** Refetch even known keys after this long, so removed keys eventually stop verifying. */
  cacheMaxAgeMs?: number;
}

/** Signing keys from a JWKS URL: cached, refetched on an unknown `kid` once the cooldown has passed. */
export function remoteKeys(jwksUrl: string, options: RemoteKeysOptions = {}): JWTVerifyGetKey {
  return createRemoteJWKSet(new URL(jwksUrl), {
    timeoutDuration: options.timeoutMs ?? 5_000,
    cooldownDuration: options.cooldownMs ?? 30_000,
    cacheMaxAge: options.cacheMaxAgeMs ?? 600_000,
  });
}

/** Signing keys held in process, for the development identity provider and tests. */
export function localKeys(jwks: JSONWebKeySet): JWTVerifyGetKey {
  return createLocalJWKSet(jwks);
}
