import type { FastifyRequest } from "fastify";

/**
 * Query parameters that carry credentials when a client puts one in the URL (RFC 6750 §2.3's
 * access_token, OAuth's other tokens and secrets). The service never reads a credential from the
 * query, but the request log writes every URL: their values are written as `[redacted]`.
 */
const CREDENTIAL_PARAMETERS =
  /(^|[?&])(access_token|id_token|refresh_token|token|client_secret|api_key|apikey|password)=([^&#]*)/gi;

/** `url` with the values of credential parameters in its query replaced by `[redacted]`. */
export function redactedUrl(url: string): string {
  const query = url.indexOf("?");
  if (query < 0) return url;
  return url.slice(0, query) + url.slice(query).replace(CREDENTIAL_PARAMETERS, "$1$2=[redacted]");
}

/** The request as each log line of it shows it: Fastify's own fields, the URL redacted. */
export function loggedRequest(request: FastifyRequest) {
  return {
    method: request.method,
    url: redactedUrl(request.url),
    version: request.headers?.["accept-version"],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}
