import type { AnswerClass } from "../request/vocabulary.ts";

/** The HTTP surface of docs/behaviour.md §2, matched from method and path alone. */
export type Route =
  | { readonly kind: "rpc"; readonly network: string }
  | {
      readonly kind: "get";
      readonly network: string;
      readonly method: string;
      readonly params: string;
    }
  | { readonly kind: "status"; readonly network: string | null }
  | { readonly kind: "health" }
  | { readonly kind: "preflight" }
  | { readonly kind: "bad_path"; readonly message: string }
  | { readonly kind: "not_found" }
  | { readonly kind: "method_not_allowed"; readonly allow: string };

function decodeSegment(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export function matchRoute(httpMethod: string, rawPath: string): Route {
  const method = httpMethod.toUpperCase();
  if (method === "OPTIONS") return { kind: "preflight" };
  const segments = rawPath.split("/").filter((segment) => segment !== "");
  const [first, second, third, ...rest] = segments;
  if (first === undefined) return { kind: "not_found" };
  if (segments.length === 1 && first === "health") {
    return method === "GET" ? { kind: "health" } : { kind: "method_not_allowed", allow: "GET" };
  }
  if (segments.length === 1 && first === "status") {
    return method === "GET"
      ? { kind: "status", network: null }
      : { kind: "method_not_allowed", allow: "GET" };
  }
  const network = decodeSegment(first);
  if (network === null)
    return { kind: "bad_path", message: "the network in the path is not valid URL encoding" };
  if (segments.length === 1) {
    return method === "POST"
      ? { kind: "rpc", network }
      : { kind: "method_not_allowed", allow: "POST" };
  }
  if (segments.length === 2 && second === "status") {
    return method === "GET"
      ? { kind: "status", network }
      : { kind: "method_not_allowed", allow: "GET" };
  }
  if (second === "get" && third !== undefined) {
    if (method !== "GET") return { kind: "method_not_allowed", allow: "GET" };
    const rpcMethod = decodeSegment(third);
    if (rpcMethod === null) {
      return { kind: "bad_path", message: "the method in the path is not valid URL encoding" };
    }
    // Params may contain '/', so everything after the method is the params. API Gateway
    // hands over the path already decoded, so text that does not decode again is taken as is.
    const marker = `/get/${third}/`;
    const rawParams = rawPath.slice(rawPath.indexOf(marker) + marker.length);
    const params = rest.length === 0 ? "[]" : (decodeSegment(rawParams) ?? rawParams);
    return { kind: "get", network, method: rpcMethod, params };
  }
  return { kind: "not_found" };
}

/** Builds the JSON-RPC body of a GET-mode request, or says why it cannot. */
export function getModeBody(method: string, params: string): { body: string } | { error: string } {
  if (!/^[A-Za-z][A-Za-z0-9_]{0,127}$/.test(method)) {
    return { error: "GET mode: the method must be a JSON-RPC method name such as eth_getBalance" };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(params);
  } catch {
    return { error: "GET mode: params must be a URL-encoded JSON array, e.g. %5B%22latest%22%5D" };
  }
  if (!Array.isArray(parsed)) {
    return { error: "GET mode: params must be a JSON array" };
  }
  // The params text itself is spliced in: it is valid JSON, and re-serialising it would
  // recurse as deep as its nesting (a stack overflow on hostile input).
  return {
    body: `{"jsonrpc":"2.0","id":1,"method":${JSON.stringify(method)},"params":${params.trim()}}`,
  };
}

/**
 * GET mode's Cache-Control (docs/behaviour.md §11), from the answer's cache class: an
 * immutable answer for a year; an unfinalized or realtime one for a block time (at least a
 * second); anything else, an error and a failure not at all. With API keys configured a
 * shared cache must not keep it (it would serve a keyed answer to callers without the key).
 */
export function cacheControlFor(
  answerClass: AnswerClass,
  status: number,
  options: { readonly blockTimeSeconds: number; readonly keyed: boolean },
): string {
  if (status !== 200 || answerClass === "never") return "no-store";
  const scope = options.keyed ? "private" : "public";
  if (answerClass === "immutable") return `${scope}, max-age=31536000, immutable`;
  return `${scope}, max-age=${Math.max(1, Math.floor(options.blockTimeSeconds))}`;
}
