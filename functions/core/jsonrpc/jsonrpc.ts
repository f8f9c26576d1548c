import { arrayElementSpans, type Member, nestingDepth, objectMembers } from "./json-raw.ts";

/** JSON-RPC 2.0 error codes the gateway itself answers with. */
export const ErrorCode = {
  parse: -32700,
  invalidRequest: -32600,
  invalidParams: -32602,
  methodNotFound: -32601,
  internal: -32603,
  /** EIP-1474 "limit exceeded". */
  limitExceeded: -32005,
  /** geth's "response too large": an answer over what the server may send; ask for less. */
  responseTooLarge: -32003,
  unauthorized: -32001,
} as const;

/** One well-formed call of a request, with its original text kept for forwarding. */
export interface Call {
  /** Position in the caller's request (0 for a single call). */
  readonly position: number;
  readonly raw: string;
  readonly method: string;
  readonly params: unknown;
  /** The caller's id as JSON text; null for a notification (no `id` member). */
  readonly rawId: string | null;
}

/** A batch member that is not a valid call: answered with an error in its place. */
export interface InvalidMember {
  readonly position: number;
  readonly rawId: string | null;
  readonly message: string;
}

export type ParsedRequest =
  | { readonly kind: "single"; readonly call: Call }
  | { readonly kind: "batch"; readonly members: ReadonlyArray<Call | InvalidMember> }
  | {
      readonly kind: "error";
      readonly code: number;
      readonly message: string;
      readonly rawId: string | null;
      readonly status: number;
    };

/** A request the parser accepted: one call or a batch. */
export type AcceptedRequest = Exclude<ParsedRequest, { kind: "error" }>;

/** Every member of the request in the caller's order. */
export function callsOf(request: AcceptedRequest): ReadonlyArray<Call | InvalidMember> {
  return request.kind === "single" ? [request.call] : request.members;
}

export interface RequestLimits {
  readonly maxBodyBytes: number;
  readonly maxBatch: number;
  /** The deepest nesting of arrays and objects a call may have (`max_json_depth`); absent: any. */
  readonly maxDepth?: number;
}

export function isCall(member: Call | InvalidMember): member is Call {
  return "method" in member;
}

/** The id's text as written (the last `id`, as JSON.parse reads it); null without one. */
function rawIdOf(
  text: string,
  members: readonly Member[],
  value: Record<string, unknown>,
): string | null {
  if (!Object.hasOwn(value, "id")) return null;
  const id = members.findLast((member) => member.name === "id");
  return id === undefined ? "null" : text.slice(id.value.start, id.value.end);
}

/** The id as the gateway may echo it: only strings, numbers and null are valid ids. */
function echoableId(value: Record<string, unknown>, rawId: string | null): string | null {
  const id = value.id;
  if (rawId === null) return null;
  return typeof id === "string" || typeof id === "number" || id === null ? rawId : "null";
}

/** Members whose duplicates servers resolve differently (first or last wins). */
const SIGNIFICANT_MEMBERS = new Set(["jsonrpc", "id", "method", "params"]);
const METHOD_NAME_MAX_CHARS = 128;
/** Printable ASCII without spaces, quotes or backslashes: every real JSON-RPC method name. */
const METHOD_NAME = new RegExp(`^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,${METHOD_NAME_MAX_CHARS}}$`);
/** A `\uD800`–`\uDFFF` escape: the cheap sign that a lone surrogate may be present. */
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

const FOLDED_LETTERS: Readonly<Record<string, string>> = {
  "\u017f": "s",
  "\u212a": "k",
  "\u0131": "i",
  "\u0130": "i",
};

/**
 * A member name as Go's encoding/json matches it to a field, as geth and erigon decode a
 * request: in any case, with `ſ` (U+017F) for `s`, `K` (U+212A) for `k`, and `ı`, `İ` for `i`.
 */
function foldedName(name: string): string {
  return name
    .replace(/[\u017f\u212a\u0131\u0130]/g, (char) => FOLDED_LETTERS[char] ?? char)
    .toLowerCase();
}

/**
 * Why the member names would let an upstream read another call than the gateway checked: a
 * significant member written twice (servers disagree on which wins), or written in another
 * case (`"Method"`, `"PARAMS"`), which geth reads as the member itself, the last one winning,
 * and anvil refuses.
 */
function ambiguousMember(members: readonly Member[]): string | null {
  const seen = new Set<string>();
  for (const { name } of members) {
    // A significant name as written is its own folding: only other names need the work.
    const folded = SIGNIFICANT_MEMBERS.has(name) ? name : foldedName(name);
    if (!SIGNIFICANT_MEMBERS.has(folded)) continue;
    if (name !== folded) {
      return `${JSON.stringify(name)} is another spelling of "${folded}" (geth reads member names in any case): write it "${folded}"`;
    }
    if (seen.has(name)) return `"${name}" appears twice`;
    seen.add(name);
  }
  return null;
}

/** True when a string anywhere in the value holds a lone surrogate (not valid Unicode). */
function hasLoneSurrogate(value: unknown): boolean {
  const pending: unknown[] = [value];
  while (pending.length > 0) {
    const next = pending.pop();
    if (typeof next === "string") {
      if (!next.isWellFormed()) return true;
    } else if (typeof next === "object" && next !== null) {
      for (const [key, item] of Object.entries(next)) {
        if (!key.isWellFormed()) return true;
        pending.push(item);
      }
    }
  }
  return false;
}

function parseMember(
  text: string,
  value: unknown,
  position: number,
  maxDepth: number,
): Call | InvalidMember {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { position, rawId: "null", message: "invalid request: expected a JSON-RPC object" };
  }
  // Upstreams disagree on which duplicate wins, so one of them could run a method this
  // gateway never checked (a denied one, say), or answer other params than the cache's key
  // names: such requests are refused.
  const members = objectMembers(text);
  const ambiguous = ambiguousMember(members);
  if (ambiguous !== null) {
    return { position, rawId: "null", message: `invalid request: ${ambiguous}` };
  }
  // Lone surrogates are not Unicode: upstreams refuse the whole body, a batch's other calls too.
  if (SURROGATE_ESCAPE.test(text) && hasLoneSurrogate(value)) {
    return {
      position,
      rawId: "null",
      message: "invalid request: a string holds a lone UTF-16 surrogate (\\uD800-\\uDFFF)",
    };
  }
  const object = value as Record<string, unknown>;
  const rawId = rawIdOf(text, members, object);
  const safeId = echoableId(object, rawId);
  if (rawId !== null && safeId !== rawId) {
    return {
      position,
      rawId: "null",
      message: "invalid request: id must be a string, number or null",
    };
  }
  // Required, as geth and anvil require it (both answer -32600 without it), so a call is
  // refused the same way whichever provider would have served it, and costs no upstream call.
  if (object.jsonrpc !== "2.0") {
    return {
      position,
      rawId: safeId ?? "null",
      message:
        object.jsonrpc === undefined
          ? 'invalid request: "jsonrpc": "2.0" is missing'
          : 'invalid request: jsonrpc must be "2.0"',
    };
  }
  if (typeof object.method !== "string" || !METHOD_NAME.test(object.method)) {
    return {
      position,
      rawId: safeId ?? "null",
      message: `invalid request: method must be a name of at most ${METHOD_NAME_MAX_CHARS} printable characters, e.g. eth_call`,
    };
  }
  // `"params": null` is no params, as geth and anvil read it (geth's own client once sent it).
  const params = object.params === null ? undefined : object.params;
  if (params !== undefined && typeof params !== "object") {
    return {
      position,
      rawId: safeId ?? "null",
      message: "invalid request: params must be an array or an object",
    };
  }
  // No node accepts absurd nesting, and a provider's front (a WAF) may drop the connection
  // instead of answering: such a call must not reach any provider.
  const depth = nestingDepth(text);
  if (depth > maxDepth) {
    return {
      position,
      rawId: safeId ?? "null",
      message: `invalid request: JSON nested ${depth} levels deep, over the limit of ${maxDepth} (max_json_depth)`,
    };
  }
  return { position, raw: text, method: object.method, params, rawId };
}

/**
 * Parses a request body. Oversized bodies and batches are refused before any forwarding;
 * an invalid member of a batch does not fail the others.
 */
export function parseRequest(body: string, limits: RequestLimits): ParsedRequest {
  const bytes = Buffer.byteLength(body, "utf8");
  if (bytes > limits.maxBodyBytes) {
    return {
      kind: "error",
      code: ErrorCode.invalidRequest,
      message: `request body of ${bytes} bytes is over the limit of ${limits.maxBodyBytes} bytes (max_body_bytes)`,
      rawId: "null",
      // 400, not 413: clients retry a 413 (viem does), and the same body never fits.
      status: 400,
    };
  }
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return {
      kind: "error",
      code: ErrorCode.parse,
      message: "parse error: the body is not valid JSON",
      rawId: "null",
      status: 400,
    };
  }
  if (Array.isArray(value)) {
    if (value.length === 0) {
      return {
        kind: "error",
        code: ErrorCode.invalidRequest,
        message: "invalid request: empty batch",
        rawId: "null",
        status: 400,
      };
    }
    if (value.length > limits.maxBatch) {
      return {
        kind: "error",
        code: ErrorCode.invalidRequest,
        // "batch too large" as geth words it: a gateway in front of this one halves the batch.
        message: `batch too large: ${value.length} calls, over the limit of ${limits.maxBatch} (max_batch)`,
        rawId: "null",
        status: 400,
      };
    }
    const spans = arrayElementSpans(body);
    const members = value.map((item, position) => {
      const span = spans[position];
      const text = span ? body.slice(span.start, span.end) : JSON.stringify(item);
      return parseMember(text, item, position, limits.maxDepth ?? Number.POSITIVE_INFINITY);
    });
    return { kind: "batch", members };
  }
  const member = parseMember(body, value, 0, limits.maxDepth ?? Number.POSITIVE_INFINITY);
  if (!isCall(member)) {
    return {
      kind: "error",
      code: ErrorCode.invalidRequest,
      message: member.message,
      rawId: member.rawId,
      status: 400,
    };
  }
  return { kind: "single", call: member };
}

/** A JSON-RPC error response as text, carrying the caller's raw id. */
export function errorResponse(
  rawId: string | null,
  code: number,
  message: string,
  data?: unknown,
): string {
  const error = data === undefined ? { code, message } : { code, message, data };
  return `{"jsonrpc":"2.0","id":${rawId ?? "null"},"error":${JSON.stringify(error)}}`;
}

/** Matches a method against patterns like `admin_*`, `debug_setHead`, `*`. */
export function methodMatches(method: string, patterns: readonly string[]): boolean {
  if (patterns.length === 0) return false;
  let compiled = compiledLists.get(patterns);
  if (compiled === undefined) {
    compiled = listRegExp(patterns);
    compiledLists.set(patterns, compiled);
  }
  return compiled.test(method);
}

/**
 * A list of patterns as one expression, compiled once per list (the config's lists live as
 * long as its model): every call of every request is checked against the deny list, ~70
 * patterns by default, which one test of one expression does in a fraction of the time.
 */
const compiledLists = new WeakMap<readonly string[], RegExp>();

function listRegExp(patterns: readonly string[]): RegExp {
  const alternatives = patterns.map((pattern) =>
    pattern
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join("[\\s\\S]*"),
  );
  return new RegExp(`^(?:${alternatives.join("|")})$`);
}

/** Whether the method may be called at all under a deny list and an optional allow list. */
export function methodPermitted(
  method: string,
  deny: readonly string[],
  allow: readonly string[] | undefined,
): boolean {
  return methodRefusal(method, deny, allow) === null;
}

/** Which list refuses the method (the deny list first), or null when it may be called. */
export function methodRefusal(
  method: string,
  deny: readonly string[],
  allow: readonly string[] | undefined,
): "methods_deny" | "methods_allow" | null {
  if (methodMatches(method, deny)) return "methods_deny";
  return allow === undefined || methodMatches(method, allow) ? null : "methods_allow";
}
