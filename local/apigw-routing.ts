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

/**
 * The route's path variables when `parts` match it: null when they do not, undefined when the
 * route has no variables. Runs for every route of every request, so nothing is allocated for
 * a route that does not match.
 */
function matchPath(
  route: ParsedRoute,
  parts: readonly string[],
): Record<string, string> | undefined | null {
  const segments = route.segments;
  let parameters: Record<string, string> | undefined;
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index] as Segment;
    if (segment.kind === "greedy") {
      const rest = parts.slice(index).join("/");
      if (rest === "") return null;
      parameters ??= {};
      parameters[segment.name] = rest;
      return parameters;
    }
    const part = parts[index];
    if (part === undefined) return null;
    if (segment.kind === "literal") {
      if (part !== segment.text) return null;
    } else {
      if (part === "") return null;
      parameters ??= {};
      parameters[segment.name] = part;
    }
  }
  return parts.length === segments.length ? parameters : null;
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
    let bestRoute: ParsedRoute | null = null;
    let bestParameters: Record<string, string> | undefined;
    for (const route of routes) {
      if (route.method !== upper && route.method !== "ANY") continue;
      const parameters = matchPath(route, parts);
      if (parameters === null) continue;
      if (bestRoute === null || bySpecificity(route, bestRoute) < 0) {
        bestRoute = route;
        bestParameters = parameters;
      }
    }
    if (bestRoute === null) return fallback;
    return bestParameters === undefined
      ? { routeKey: bestRoute.key }
      : { routeKey: bestRoute.key, pathParameters: bestParameters };
  };
}
