/**
 * The API's CORS policy, defined once: the HTTP API's `corsPreflight` (CDK), the local API
 * Gateway emulator's preflight answers and the handler's own response headers all read it, so
 * a browser is treated the same in AWS and locally.
 *
 * Origins come from the config (`cors_origins`, default `["*"]`); everything else is fixed here.
 */

/** Methods a browser may use: GET mode and status pages, POST for JSON-RPC. */
export const CORS_ALLOW_METHODS = ["GET", "POST", "OPTIONS"] as const;
/** Request headers a browser may send beyond the CORS-safelisted ones. */
export const CORS_ALLOW_HEADERS = ["content-type", "x-api-key"] as const;
/**
 * Response headers browser code may read: which provider answered, after how many attempts,
 * from the cache or not, and the served head the answer is true at.
 */
export const CORS_EXPOSE_HEADERS = [
  "x-gateway-provider",
  "x-gateway-attempts",
  "x-gateway-cache",
  "x-gateway-head",
] as const;
/** `access-control-expose-headers` as every answer carries it, joined once. */
const EXPOSE_HEADERS = CORS_EXPOSE_HEADERS.join(",");
/** How long a browser may reuse a preflight answer. */
export const CORS_MAX_AGE_SECONDS = 86_400;

export const ANY_ORIGIN = "*";
export const DEFAULT_CORS_ORIGINS: readonly string[] = [ANY_ORIGIN];

/**
 * The `access-control-allow-origin` value for a request's `Origin`: `*` when any origin is
 * allowed, the origin itself when it is listed, otherwise null (the browser then refuses).
 */
export function allowedOrigin(
  origins: readonly string[],
  requestOrigin: string | undefined,
): string | null {
  if (origins.includes(ANY_ORIGIN)) return ANY_ORIGIN;
  if (requestOrigin === undefined || requestOrigin === "") return null;
  return origins.includes(requestOrigin) ? requestOrigin : null;
}

/**
 * The CORS headers of an ordinary (non-preflight) answer. With a list of origins the answer
 * depends on the caller's `Origin`, so it says `vary: origin` for shared caches (GET mode is
 * meant to be cached by a CDN).
 */
export function corsResponseHeaders(
  origins: readonly string[],
  requestOrigin: string | undefined,
): Record<string, string> {
  const varies: Record<string, string> = origins.includes(ANY_ORIGIN) ? {} : { vary: "origin" };
  const allowed = allowedOrigin(origins, requestOrigin);
  if (allowed === null) return varies;
  return {
    ...varies,
    "access-control-allow-origin": allowed,
    "access-control-expose-headers": EXPOSE_HEADERS,
  };
}

/** A CORS preflight: OPTIONS with both `Origin` and `Access-Control-Request-Method`. */
export function isPreflight(
  method: string,
  headers: Readonly<Record<string, string | undefined>>,
): boolean {
  return (
    method.toUpperCase() === "OPTIONS" &&
    Boolean(headers.origin) &&
    Boolean(headers["access-control-request-method"])
  );
}

/**
 * The answer to a preflight, as API Gateway gives it from a `corsPreflight` configuration:
 * 204 with the allowed methods, headers and max age, or a 204 without any CORS header when
 * the origin is not allowed (the browser then blocks the call).
 */
export function preflightHeaders(
  origins: readonly string[],
  requestOrigin: string | undefined,
): Record<string, string> {
  const allowed = allowedOrigin(origins, requestOrigin);
  if (allowed === null) return origins.includes(ANY_ORIGIN) ? {} : { vary: "origin" };
  return {
    ...corsResponseHeaders(origins, requestOrigin),
    "access-control-allow-methods": CORS_ALLOW_METHODS.join(","),
    "access-control-allow-headers": CORS_ALLOW_HEADERS.join(","),
    "access-control-max-age": String(CORS_MAX_AGE_SECONDS),
  };
}

/** `cors_origins` entries: `*` alone, or origins such as `https://app.example.com:8443`. */
export function corsOriginProblem(origin: string): string | null {
  if (origin === ANY_ORIGIN) return null;
  if (origin.includes("*")) {
    return `"${origin}": wildcards are not supported; list each origin, or use "*" alone`;
  }
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return `"${origin}" is not an origin: write it as https://host or https://host:port`;
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    return `"${origin}" must start with https:// or http://`;
  }
  if (parsed.origin !== origin) {
    return `"${origin}" is not an origin as browsers send it: use "${parsed.origin}" (lower case, no path, no trailing slash, no default port)`;
  }
  return null;
}
