/**
 * How an HTTP API picks the route of a request: the method must match (or the route says
 * ANY), the path must match segment by segment, and of the matching routes the most specific
 * wins: a route without a greedy `{name+}` before one with it, a literal segment before a
 * `{variable}`, an exact method before ANY, and `$default` only when nothing else matches.
 */

export interface RouteMatch {
  readonly routeKey: string;
  /** Values of the route's path variables, absent for a route without any. */
  readonly pathParameters?: Record<string, string>;
}

type Segment =
  | { readonly kind: "literal"; readonly text: string }
  | { readonly kind: "variable"; readonly name: string }
  | { readonly kind: "greedy"; readonly name: string };

interface ParsedRoute {
  readonly key: string;
  readonly method: string;
  readonly segments: readonly Segment[];
}

export const DEFAULT_ROUTE_KEY = "$default";

function segmentsOf(path: string): string[] {
  return path === "/" ? [] : path.slice(1).split("/");
}

function parseRouteKey(key: string): ParsedRoute | null {
  if (key === DEFAULT_ROUTE_KEY) return null;
  const space = key.indexOf(" ");
  const method = key.slice(0, space).toUpperCase();
  const segments = segmentsOf(key.slice(space + 1)).map((text): Segment => {
    const variable = /^\{([^}]+)\}$/.exec(text);
    if (variable === null) return { kind: "literal", text };
    const name = variable[1] as string;
    return name.endsWith("+")
      ? { kind: "greedy", name: name.slice(0, -1) }
      : { kind: "variable", name };
  });
  return { key, method, segments };
}

function matchPath(route: ParsedRoute, parts: readonly string[]): Record<string, string> | null {
  const parameters: Record<string, string> = {};
  for (const [index, segment] of route.segments.entries()) {
    const part = parts[index];
    if (segment.kind === "greedy") {
      const rest = parts.slice(index).join("/");
      if (rest === "") return null;
      parameters[segment.name] = rest;
      return parameters;
    }
    if (part === undefined) return null;
    if (segment.kind === "literal" && part !== segment.text) return null;
    if (segment.kind === "variable") {
      if (part === "") return null;
      parameters[segment.name] = part;
    }
  }
  return parts.length === route.segments.length ? parameters : null;
}

/** Negative when `a` is more specific than `b`. */
function bySpecificity(a: ParsedRoute, b: ParsedRoute): number {
  const greedy = (route: ParsedRoute) => (route.segments.at(-1)?.kind === "greedy" ? 1 : 0);
  if (greedy(a) !== greedy(b)) return greedy(a) - greedy(b);
  const rank = { literal: 0, variable: 1, greedy: 2 } as const;
  const length = Math.min(a.segments.length, b.segments.length);
  for (let index = 0; index < length; index++) {
    const difference =
      rank[(a.segments[index] as Segment).kind] - rank[(b.segments[index] as Segment).kind];
    if (difference !== 0) return difference;
  }
  if (a.segments.length !== b.segments.length) return b.segments.length - a.segments.length;
  return (a.method === "ANY" ? 1 : 0) - (b.method === "ANY" ? 1 : 0);
}

/**
 * The router of an API with these route keys: for a method and a decoded path, the route the
 * request takes, or null when none matches (API Gateway answers 404).
 */
export function routerFor(
  routeKeys: readonly string[],
): (method: string, path: string) => RouteMatch | null {
  const routes = routeKeys.flatMap((key) => parseRouteKey(key) ?? []);
  const fallback: RouteMatch | null = routeKeys.includes(DEFAULT_ROUTE_KEY)
    ? { routeKey: DEFAULT_ROUTE_KEY }
    : null;
  return (method, path) => {
    const parts = segmentsOf(path);
    const upper = method.toUpperCase();
    let best: { route: ParsedRoute; parameters: Record<string, string> } | null = null;
    for (const route of routes) {
      if (route.method !== upper && route.method !== "ANY") continue;
      const parameters = matchPath(route, parts);
      if (parameters === null) continue;
      if (best === null || bySpecificity(route, best.route) < 0) best = { route, parameters };
    }
    if (best === null) return fallback;
    return Object.keys(best.parameters).length === 0
      ? { routeKey: best.route.key }
      : { routeKey: best.route.key, pathParameters: best.parameters };
  };
}
