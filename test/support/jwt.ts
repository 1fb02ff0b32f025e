/**
 * Test helpers for bearer tokens: key pairs, a JWKS server on 127.0.0.1, signing with arbitrary
 * claims and headers, and the bad tokens a verifier must refuse.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createLocalJWKSet,
  exportJWK,
  exportSPKI,
  generateKeyPair,
  type JSONWebKeySet,
  type JWK,
  type JWTHeaderParameters,
  type JWTPayload,
  type JWTVerifyGetKey,
  SignJWT,
} from "jose";

export type TestAlgorithm = "RS256" | "ES256";

export interface TestKey {
  alg: TestAlgorithm;
  kid: string;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** Public members only, with kid, alg and use. */
  publicJwk: JWK;
  /** SPKI PEM of the public key: what an HMAC-confusion attacker would use as the secret. */
  publicPem: string;
}

let kidCounter = 0;

export async function generateTestKey(
  alg: TestAlgorithm = "RS256",
  kid = `test-key-${++kidCounter}`,
): Promise<TestKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk: JWK = { ...(await exportJWK(publicKey)), kid, alg, use: "sig" };
  return { alg, kid, privateKey, publicKey, publicJwk, publicPem: await exportSPKI(publicKey) };
}

export function jwksOf(...keys: TestKey[]): JSONWebKeySet {
  return { keys: keys.map((key) => key.publicJwk) };
}

export function localJwks(...keys: TestKey[]): JWTVerifyGetKey {
  return createLocalJWKSet(jwksOf(...keys));
}

/** Claims whose value is undefined are left out, so a default can be removed by overriding it. */
export type ClaimOverrides = Record<string, unknown>;

/** Signs `claims` as given (no defaults added); `header` is merged over `{alg, kid, typ}`. */
export async function signToken(
  key: TestKey,
  claims: JWTPayload,
  header: Partial<JWTHeaderParameters> = {},
): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: "JWT", ...header })
    .sign(key.privateKey);
}

export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

export function base64url(value: string | Uint8Array): string {
  return Buffer.from(value).toString("base64url");
}

/** A token whose parts are exactly the given JSON and signature bytes. */
export function rawToken(header: object, claims: object, signature = ""): string {
  return `${base64url(JSON.stringify(header))}.${base64url(JSON.stringify(claims))}.${signature}`;
}

export interface TestIssuerOptions {
  issuer?: string;
  audience?: string;
  alg?: TestAlgorithm;
}

/**
 * An identity provider in a box: one signing key, default claims for a normal user of
 * `acct-1` with all three scopes, and every kind of token a verifier must refuse.
 */
export class TestIssuer {
  private constructor(
    readonly issuer: string,
    readonly audience: string,
    readonly key: TestKey,
  ) {}

  static async create(options: TestIssuerOptions = {}): Promise<TestIssuer> {
    return new TestIssuer(
      options.issuer ?? "https://issuer.test/",
      options.audience ?? "https://source-ledger.local",
      await generateTestKey(options.alg ?? "RS256"),
    );
  }

  /** Namespace of the custom claims: the audience without trailing `/`. */
  get namespace(): string {
    return this.audience.replace(/\/+$/, "");
  }

  claim(name: "account_id" | "role" | "client_name" | "v1_client_id"): string {
    return `${this.namespace}/${name}`;
  }

  get keys(): JWTVerifyGetKey {
    return localJwks(this.key);
  }

  get jwks(): JSONWebKeySet {
    return jwksOf(this.key);
  }

  claims(overrides: ClaimOverrides = {}): JWTPayload {
    const now = nowSeconds();
    const merged: Record<string, unknown> = {
      iss: this.issuer,
      aud: this.audience,
      sub: "client-1@clients",
      iat: now,
      exp: now + 3600,
      scope: "read:sources write:sources delete:sources",
      [this.claim("account_id")]: "acct-1",
      [this.claim("role")]: "user",
      [this.claim("client_name")]: "Client One",
      [this.claim("v1_client_id")]: "client-1",
      ...overrides,
    };
    for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
    return merged;
  }

  token(overrides: ClaimOverrides = {}, header: Partial<JWTHeaderParameters> = {}): Promise<string> {
    return signToken(this.key, this.claims(overrides), header);
  }

  // --- tokens a verifier must refuse ---

  /** Unsigned: `alg: none` with an empty signature. */
  algNone(overrides: ClaimOverrides = {}): string {
    return rawToken({ alg: "none", typ: "JWT" }, this.claims(overrides));
  }

  /** HS256 keyed with the public key PEM: accepted by verifiers that let the token pick the algorithm. */
  async hmacConfusion(overrides: ClaimOverrides = {}): Promise<string> {
    return new SignJWT(this.claims(overrides))
      .setProtectedHeader({ alg: "HS256", kid: this.key.kid, typ: "JWT" })
      .sign(new TextEncoder().encode(this.key.publicPem));
  }

  /** Expired `secondsAgo` seconds ago (default well beyond any clock tolerance). */
  expired(secondsAgo = 60): Promise<string> {
    const now = nowSeconds();
    return this.token({ iat: now - 3600, exp: now - secondsAgo });
  }

  notYetValid(secondsAhead = 60): Promise<string> {
    return this.token({ nbf: nowSeconds() + secondsAhead });
  }

  wrongIssuer(): Promise<string> {
    return this.token({ iss: "https://evil.test/" });
  }

  wrongAudience(): Promise<string> {
    return this.token({ aud: "https://other-api.test" });
  }

  /** Signed by a different key that claims this issuer's kid. */
  async forged(overrides: ClaimOverrides = {}): Promise<string> {
    const impostor = await generateTestKey(this.key.alg, this.key.kid);
    return signToken(impostor, this.claims(overrides));
  }

  /** Properly signed by a key the JWKS does not list. */
  async unknownKid(overrides: ClaimOverrides = {}): Promise<string> {
    const stranger = await generateTestKey(this.key.alg, "kid-nobody-published");
    return signToken(stranger, this.claims(overrides));
  }

  /** Not a JWS at all. */
  malformed(): string {
    return "not.a-jwt";
  }
}

export interface JwksServer {
  /** The JWKS URL, `http://127.0.0.1:<port>/.well-known/jwks.json`. */
  url: string;
  /** Requests served so far. */
  readonly requests: number;
  setKeys(jwks: JSONWebKeySet): void;
  /** Answer with this status (and no JWKS) until set back to 200. */
  setStatus(status: number): void;
  close(): Promise<void>;
}

/** Serves a JWKS on 127.0.0.1 with an ephemeral port; close it in afterAll/afterEach. */
export async function startJwksServer(initial: JSONWebKeySet): Promise<JwksServer> {
  let jwks = initial;
  let status = 200;
  let requests = 0;
  const server: Server = createServer((req, res) => {
    requests += 1;
    if (req.url !== "/.well-known/jwks.json") {
      res.writeHead(404).end();
      return;
    }
    if (status !== 200) {
      res.writeHead(status).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    get requests() {
      return requests;
    },
    setKeys(next) {
      jwks = next;
    },
    setStatus(next) {
      status = next;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
