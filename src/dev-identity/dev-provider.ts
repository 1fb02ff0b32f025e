import type { FastifyPluginAsync, FastifyReply } from "fastify";
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTVerifyGetKey, SignJWT } from "jose";
import { claimNamespace } from "../auth/claims.js";
import { localKeys } from "../auth/keys.js";
import { createDemoClient, type DevClient, loadDevClients } from "./dev-clients.js";
import { decideGrant, type Grant } from "./dev-token-grant.js";
import { readTokenRequest } from "./dev-token-request.js";
import type { OAuthError } from "./oauth-error.js";

const JWKS_PATH = "/.well-known/jwks.json";
const TOKEN_PATH = "/oauth/token";
const ALGORITHM = "ES256";
const DEFAULT_TOKEN_TTL_SECONDS = 3600;
// A token request is a handful of short fields.
const TOKEN_BODY_LIMIT = 16 * 1024;

export interface DevProviderLogger {
  info(message: string): void;
}

export interface DevIdentityProviderOptions {
  audience: string;
  /** DEV_CLIENTS_FILE; without it one demo client is created. */
  clientsFile?: string | null;
  logger: DevProviderLogger;
  tokenTtlSeconds?: number;
  /** Known up front only in tests; the service calls setIssuer once it listens. */
  issuer?: string;
}

/** Shaped like the token request body, so it can be printed as a ready-to-use example. */
export interface DemoClientCredentials {
  client_id: string;
  client_secret: string;
  account_id: string;
}

export interface DevIdentityProvider {
  /** Register without a prefix: it serves POST /oauth/token and GET /.well-known/jwks.json. */
  plugin: FastifyPluginAsync;
  /** The provider's public key, for createTokenVerifier. */
  keys: JWTVerifyGetKey;
  /** `http://<host>:<port>/`, once the server listens. */
  setIssuer(issuer: string): void;
  /** Throws until setIssuer has been called: tokens must never carry a placeholder issuer. */
  issuer(): string;
  /** Present when no clients file was given; main prints it at start. */
  demoClient?: DemoClientCredentials;
}

/**
 * The development identity provider (docs/api.md §3): a client-credentials token endpoint and its
 * JWKS, signing with a key pair generated at start, so tokens do not survive a restart.
 * Fails (DevClientsFileError) when the clients file is unreadable or invalid.
 */
export async function createDevIdentityProvider(options: DevIdentityProviderOptions): Promise<DevIdentityProvider> {
  const { logger, audience } = options;
  const ttl = options.tokenTtlSeconds ?? DEFAULT_TOKEN_TTL_SECONDS;
  const fromFile = options.clientsFile ? await loadDevClients(options.clientsFile) : null;
  const clientList = fromFile ?? [createDemoClient()];
  const clients = new Map(clientList.map((client) => [client.clientId, client]));
  const signer = await createSigner();
  let issuer = options.issuer ?? null;

  logger.info(
    `development identity provider enabled: ${clientList.length} client(s)` +
      `${options.clientsFile ? ` from ${options.clientsFile}` : " (demo)"}, signing key ${signer.jwk.kid}`,
  );

  const issue = async (grant: Grant, currentIssuer: string) => {
    const now = Math.floor(Date.now() / 1000);
    const token = await new SignJWT(customClaims(grant, audience))
      .setProtectedHeader({ alg: ALGORITHM, kid: signer.jwk.kid, typ: "JWT" })
      .setIssuer(currentIssuer)
      .setAudience(audience)
      .setSubject(grant.client.clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + ttl)
      .sign(signer.privateKey);
    return { access_token: token, token_type: "Bearer", expires_in: ttl, scope: grant.scopes.join(" ") };
  };

  const plugin: FastifyPluginAsync = async (app) => {
    // Raw bodies only: every malformed body then gets an RFC 6749 error from the handler, and no
    // parser error carrying the body (with its client secret) can reach an error handler or a log.
    app.removeAllContentTypeParsers();
    app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: TOKEN_BODY_LIMIT }, (_req, body, done) => {
      done(null, body);
    });
    app.setErrorHandler((error, req, reply) => {
      const status = statusOf(error);
      if (status >= 500) {
        // Request-independent failures only (signing); the request body is never part of the error.
        req.log.error({ err: error }, "token endpoint failed");
        return sendJson(reply, 500, { error: "server_error" });
      }
      return sendJson(reply, 400, { error: "invalid_request", error_description: describeStatus(status) });
    });

    const jwks = { keys: [signer.jwk] };
    app.get(JWKS_PATH, async (_req, reply) => {
      return reply.header("cache-control", "public, max-age=300").send(jwks);
    });

    app.post(TOKEN_PATH, async (req, reply) => {
      const params = readTokenRequest({
        contentType: req.headers["content-type"],
        body: Buffer.isBuffer(req.body) ? req.body : undefined,
        authorization: req.headers.authorization,
      });
      if (!params.ok) return sendOAuthError(reply, params.error);
      const grant = decideGrant(params.value, { clients, audience });
      if (!grant.ok) return sendOAuthError(reply, grant.error);
      if (issuer === null) {
        return sendJson(reply, 500, { error: "server_error", error_description: "issuer not configured yet" });
      }
      return sendJson(reply, 200, await issue(grant.value, issuer));
    });
  };

  return {
    plugin,
    keys: localKeys({ keys: [signer.jwk] }),
    setIssuer(value: string) {
      // Parsed so a malformed issuer fails at start, not in every token request.
      new URL(value);
      issuer = value;
    },
    issuer() {
      if (issuer === null)
        throw new Error("development identity provider: issuer not set (call setIssuer after listen)");
      return issuer;
    },
    demoClient: fromFile === null ? demoCredentials(clientList[0]) : undefined,
  };
}

/** Signing key pair plus its public JWK; the private key is never exportable. */
async function createSigner(): Promise<{ privateKey: CryptoKey; jwk: JWK & { kid: string } }> {
  const { privateKey, publicKey } = await generateKeyPair(ALGORITHM);
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return { privateKey, jwk: { ...publicJwk, kid, alg: ALGORITHM, use: "sig" } };
}

function customClaims(grant: Grant, audience: string): Record<string, string> {
  const ns = claimNamespace(audience);
  const { client } = grant;
  const claims: Record<string, string> = {
    scope: grant.scopes.join(" "),
    [`${ns}/role`]: client.role,
    [`${ns}/v1_client_id`]: client.clientId,
  };
  if (client.accountId !== null) claims[`${ns}/account_id`] = client.accountId;
  if (client.clientName !== null) claims[`${ns}/client_name`] = client.clientName;
  return claims;
}

function demoCredentials(client: DevClient): DemoClientCredentials {
  return { client_id: client.clientId, client_secret: client.clientSecret, account_id: client.accountId ?? "" };
}

function sendOAuthError(reply: FastifyReply, error: OAuthError): FastifyReply {
  if (error.basicChallenge === true) reply.header("www-authenticate", 'Basic realm="dev-identity-provider"');
  const body: Record<string, string> = { error: error.error };
  if (error.description !== undefined) body.error_description = error.description;
  return sendJson(reply, error.status, body);
}

/** RFC 6749 §5.1: token responses, errors included, must not be cached. */
function sendJson(reply: FastifyReply, status: number, body: object): FastifyReply {
  return reply
    .code(status)
    .header("cache-control", "no-store")
    .header("pragma", "no-cache")
    .type("application/json")
    .send(body);
}

function statusOf(error: unknown): number {
  if (typeof error === "object" && error !== null && "statusCode" in error && typeof error.statusCode === "number") {
    return error.statusCode;
  }
  return 500;
}

// Fixed wording: Fastify's own messages may quote what the client sent.
function describeStatus(status: number): string {
  if (status === 413) return "request body too large";
  if (status === 415) return "unsupported content type";
  return "malformed request";
}
