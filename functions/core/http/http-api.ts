/**
 * The HTTP API in front of the proxy function, defined once for the CDK stack and the local
 * API Gateway emulator, so a request is routed, timed out and refused the same way in both.
 *
 * GET and POST on any path reach the function, and its own routing (`matchRoute`) answers
 * everything, unknown paths and GET mode without a params segment included. OPTIONS has no
 * route: API Gateway answers CORS preflights itself from the CORS policy (`cors.ts`). Other
 * methods match no route and get API Gateway's `404 {"message":"Not Found"}`.
 *
 * The status routes are listed on their own only so they can be throttled far tighter than
 * JSON-RPC: API Gateway picks the most specific matching route, and an exact path or a path
 * with a `{variable}` is more specific than a greedy `{proxy+}`.
 */
export interface ApiRoute {
  readonly method: "GET" | "POST";
  readonly path: string;
  /** Which stage throttle applies: the stage default (`rpc`) or the status routes' own. */
  readonly throttle: "rpc" | "status";
}

export const API_ROUTES: readonly ApiRoute[] = [
  { method: "POST", path: "/", throttle: "rpc" },
  { method: "POST", path: "/{proxy+}", throttle: "rpc" },
  { method: "GET", path: "/", throttle: "rpc" },
  { method: "GET", path: "/{proxy+}", throttle: "rpc" },
  { method: "GET", path: "/status", throttle: "status" },
  { method: "GET", path: "/{network}/status", throttle: "status" },
];

/** API Gateway's route key, e.g. `GET /{network}/status`. */
export function routeKeyOf(route: ApiRoute): string {
  return `${route.method} ${route.path}`;
}

/**
 * The proxy function's timeout. Past it Lambda fails the invocation and API Gateway answers
 * 500; it is under the integration timeout so that this, not a 503, is what a caller sees.
 */
export const PROXY_FUNCTION_TIMEOUT_SECONDS = 29;
/** HTTP APIs wait at most 30 s for an integration, then answer 503 Service Unavailable. */
export const INTEGRATION_TIMEOUT_SECONDS = 30;
