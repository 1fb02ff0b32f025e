/**
 * The bench's identity provider: a key pair generated per run, its JWKS served on 127.0.0.1 (the
 * service's AUTH_ISSUER points here and fetches the keys like any remote issuer), and real
 * RS256 or ES256 access tokens signed with jose.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export const AUDIENCE = "https://source-ledger.local";

export interface BenchIssuer {
  /** AUTH_ISSUER for the service: `http://127.0.0.1:<port>/` (the JWKS is at `.well-known/jwks.json`). */
  issuer: string;
  /** Requests the JWKS endpoint has served (the service should fetch once and cache). */
  readonly jwksRequests: number;
  token(claims: { accountId: string; actor: string; scope?: string }): Promise<string>;
  close(): Promise<void>;
}

export async function startIssuer(alg: "RS256" | "ES256" = "RS256"): Promise<BenchIssuer> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const kid = `bench-${alg.toLowerCase()}`;
  const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(publicKey)), kid, alg, use: "sig" }] });
  let jwksRequests = 0;
  const server: Server = createServer((req, res) => {
    if (req.url !== "/.well-known/jwks.json") {
      res.writeHead(404).end();
      return;
    }
    jwksRequests += 1;
    res.writeHead(200, { "content-type": "application/json" }).end(jwks);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  const ns = AUDIENCE.replace(/\/+$/, "");

  return {
    issuer,
    get jwksRequests() {
      return jwksRequests;
    },
    token({ accountId, actor, scope = "read:sources write:sources delete:sources" }) {
      return new SignJWT({
        scope,
        [`${ns}/account_id`]: accountId,
        [`${ns}/role`]: "user",
        [`${ns}/client_name`]: actor,
      })
        .setProtectedHeader({ alg, kid, typ: "JWT" })
        .setIssuer(issuer)
        .setAudience(AUDIENCE)
        .setSubject("bench-client@clients")
        .setIssuedAt()
        .setExpirationTime("4h")
        .sign(privateKey);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
