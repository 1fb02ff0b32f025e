import type { JSONWebKeySet } from "jose";

/** A real key set is a few kilobytes; anything this large is not one, and is not read further. */
const MAX_JWKS_BYTES = 1024 * 1024;

/**
 * Why a JWKS fetch failed. The message names what went wrong, never the URL, so it can be logged
 * as the cause of a 503 without revealing more than the operator already configured.
 */
export class JwksFetchError extends Error {
  override name = "JwksFetchError";
}

/**
 * One GET of a JWKS document, bounded in time (`timeoutMs` covers connecting, the headers and the
 * body) and in size. Resolves to a structurally valid key set; rejects with JwksFetchError on a
 * timeout, a network error, any status but 200 (redirects are not followed), a body that is too
 * large or not JSON, or JSON that is not `{"keys": [ {...}, ... ]}`.
 */
export async function fetchJwks(url: URL, timeoutMs: number): Promise<JSONWebKeySet> {
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const response = await fetch(url, {
      method: "GET",
      redirect: "manual",
      headers: { accept: "application/jwk-set+json, application/json" },
      signal,
    });
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new JwksFetchError(`the JWKS endpoint answered HTTP ${response.status}`);
    }
    return parseKeySet(await readBounded(response));
  } catch (error) {
    if (error instanceof JwksFetchError) throw error;
    if (signal.aborted) throw new JwksFetchError(`the JWKS endpoint did not answer within ${timeoutMs} ms`);
    throw new JwksFetchError("the JWKS endpoint could not be reached", { cause: error });
  }
}

async function readBounded(response: Response): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_JWKS_BYTES) {
    await response.body?.cancel();
    throw tooLarge();
  }
  if (response.body === null) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_JWKS_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function tooLarge(): JwksFetchError {
  return new JwksFetchError(`the JWKS response exceeds ${MAX_JWKS_BYTES} bytes`);
}

function parseKeySet(text: string): JSONWebKeySet {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new JwksFetchError("the JWKS response is not JSON");
  }
  if (!isKeySet(parsed)) throw new JwksFetchError("the JWKS response is not a JSON Web Key Set");
  return parsed;
}

function isKeySet(value: unknown): value is JSONWebKeySet {
  if (!isObject(value)) return false;
  const keys = value.keys;
  return Array.isArray(keys) && keys.every(isObject);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
