import { isLoopbackHost } from "../auth/loopback.js";

/** What the decision reads of the configuration. */
export interface DevIdentitySetting {
  authIssuer: string | null;
  devAuthAllowed: boolean;
  production: boolean;
  host: string;
}

/**
 * Why the development identity provider must not start under `config`, or null. It hands out
 * tokens for any account to anyone who can reach it and prints a working client secret, so it is
 * refused in production (NODE_ENV=production) and whenever the service listens beyond loopback,
 * unless DEV_AUTH=allow says so explicitly (docker-compose's local stack does).
 */
export function devIdentityRefusal(config: DevIdentitySetting): string | null {
  if (config.authIssuer !== null || config.devAuthAllowed) return null;
  const where = config.production
    ? "NODE_ENV=production"
    : isLoopbackHost(config.host)
      ? null
      : `HOST=${config.host} listens beyond loopback`;
  if (where === null) return null;
  return (
    `AUTH_ISSUER is unset, so the development identity provider would run, but ${where}: ` +
    "set AUTH_ISSUER (and AUTH_AUDIENCE) to your identity provider, or DEV_AUTH=allow for a local stack"
  );
}
