import fc from "fast-check";

/**
 * Shared generators for the fuzz suite: hostile strings, JSON text built token by token (so
 * whitespace, escapes and spans are under the test's control) and valid JSON-RPC calls.
 *
 * Runs are deterministic per seed; fast-check prints the seed and the counterexample path of
 * a failure. `FC_SEED=<n> npx vitest run test/fuzz` replays a run; `FC_RUNS_FACTOR=10` runs
 * each property ten times longer (local soak, not CI).
 */
export function fuzzParams<T>(numRuns: number): fc.Parameters<T> {
  const factor = Number(process.env.FC_RUNS_FACTOR ?? "1");
  const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);
  return {
    numRuns: Math.max(1, Math.round(numRuns * (Number.isFinite(factor) ? factor : 1))),
    ...(seed !== undefined && Number.isFinite(seed) ? { seed } : {}),
  };
}

/** A UTF-16 code unit that is half of a surrogate pair, alone. */
export const loneSurrogate = fc
  .integer({ min: 0xd800, max: 0xdfff })
  .map((code) => String.fromCharCode(code));

/** Characters that matter to JSON scanners, URL decoders and HTTP. */
const syntaxChar = fc.constantFrom(
  '"',
  "\\",
  "{",
  "}",
  "[",
  "]",
  ",",
  ":",
  " ",
  "\n",
  "\t",
  "\r",
  "\u0000",
  "\u001f",
  "\u00a0",
  "\u2028",
  "\u2029",
  "\ufeff",
  "/",
  "%",
  "?",
  "#",
  ".",
  "e",
  "-",
  "+",
  "0",
  "*",
);

export const hostileChar = fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
  { weight: 3, arbitrary: syntaxChar },
  { weight: 1, arbitrary: loneSurrogate },
);

/** Any string, biased towards syntax characters, lone surrogates and astral code points. */
export function hostileString(maxLength = 24): fc.Arbitrary<string> {
  return fc.string({ unit: hostileChar, maxLength });
}

/** Random bytes turned into a string the way a server would (invalid UTF-8, odd UTF-16). */
export const bytesAsString = fc
  .tuple(fc.uint8Array({ maxLength: 160 }), fc.constantFrom("utf8", "latin1", "utf16le"))
  .map(([bytes, encoding]) => Buffer.from(bytes).toString(encoding as BufferEncoding));

/** Keys that have bitten JavaScript parsers and mergers before. */
export const prototypeKey = fc.constantFrom(
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "isPrototypeOf",
);

const rpcKey = fc.constantFrom("id", "jsonrpc", "method", "params", "result", "error", "ID", "id ");

/**
 * Object keys never contain a backslash once decoded (escape sequences in the key's TEXT are
 * generated, see jsonStringText). The reason is a V8 bug, not the gateway: on Node 24.21
 * (V8 13.6) JSON.parse, after it has seen an object whose key contains "\\", matches a later
 * escaped key against that key by raw prefix and returns the wrong key:
 * JSON.parse('{"M":"","\\\\":0}') then JSON.parse('{"M":"","\\u0077":0}') gives {"M":"","\\":0}.
 * That poisons the oracle (JSON.parse) of these properties. Node 20 (V8 11.3) is right.
 */
export function withoutBackslash(key: string): string {
  const cleaned = key.replaceAll("\\", "/");
  // The same bug bites single-character keys whose text is an escape ("\"" or "\u0021"):
  // such a key is never generated, and jsonKeyText never escapes a one-character key.
  return cleaned.length === 1 && (cleaned === '"' || cleaned < " ") ? "/" : cleaned;
}

/** A key as JSON text: like jsonStringText, but a one-character key is never escaped. */
export function jsonKeyText(key: string, escapeAll = false): string {
  return jsonStringText(key, escapeAll && key.length > 1);
}

export const objectKey = fc
  .oneof(
    { weight: 3, arbitrary: rpcKey },
    { weight: 2, arbitrary: prototypeKey },
    { weight: 3, arbitrary: hostileString(8) },
  )
  .map(withoutBackslash);

/** A deep copy whose object keys have no backslash (see withoutBackslash); `__proto__` stays an own key. */
export function cleanKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(cleanKeys);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    Object.defineProperty(out, withoutBackslash(key), {
      value: cleanKeys(item),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** fc.jsonValue, with keys cleaned as above. */
export function jsonValue(constraints: fc.JsonSharedConstraints = {}): fc.Arbitrary<unknown> {
  return fc.jsonValue(constraints).map(cleanKeys);
}

/** Number literals at and beyond the edges of IEEE-754 doubles, all valid JSON. */
export const numberText = fc.oneof(
  fc.constantFrom(
    "0",
    "-0",
    "1e999999",
    "-1e400",
    "1E+308",
    "2e-400",
    "0.0000000000000000000000001",
    "123456789012345678901234567890123456789",
    "-9007199254740993",
    "1.7976931348623157e308",
    "5e-324",
  ),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((value) => JSON.stringify(value)),
  fc
    .tuple(fc.integer(), fc.integer({ min: -99_999, max: 99_999 }), fc.constantFrom("e", "E"))
    .map(([mantissa, exponent, e]) => `${mantissa}${e}${exponent >= 0 ? "+" : ""}${exponent}`),
);

/** JSON whitespace between tokens: usually none, sometimes a lot. */
export const whitespace = fc.oneof(
  { weight: 6, arbitrary: fc.constant("") },
  { weight: 3, arbitrary: fc.constantFrom(" ", "\n", "\t", "\r\n") },
  {
    weight: 1,
    arbitrary: fc.string({ unit: fc.constantFrom(" ", "\n", "\t", "\r"), maxLength: 8 }),
  },
);

/**
 * A string as JSON text. `escapeAll` writes every code unit as `\uXXXX` (still the same
 * string to JSON.parse); otherwise only what JSON requires is escaped, so lone surrogates
 * and U+2028 stay raw in the text.
 */
export function jsonStringText(value: string, escapeAll = false): string {
  let out = '"';
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    const char = value[i] as string;
    if (escapeAll || code < 0x20) out += `\\u${code.toString(16).padStart(4, "0")}`;
    else if (char === '"') out += '\\"';
    else if (char === "\\") out += "\\\\";
    else out += char;
  }
  return `${out}"`;
}

const stringText = fc
  .tuple(hostileString(16), fc.boolean(), fc.boolean())
  .map(([value, escaped, escapeAll]) =>
    escaped && escapeAll ? jsonStringText(value, true) : jsonStringText(value),
  );

const leafText = fc.oneof(
  fc.constantFrom("null", "true", "false"),
  numberText,
  stringText,
  stringText,
);

/**
 * JSON text with hostile keys (duplicates allowed, `id` too), random whitespace, escapes and
 * numbers. Always valid JSON. Keys may repeat, so this is not for span oracles.
 */
export const jsonText: fc.Arbitrary<string> = fc.letrec<{
  value: string;
  array: string;
  object: string;
}>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    leafText,
    tie("array"),
    tie("object"),
  ),
  array: fc
    .tuple(whitespace, fc.array(fc.tuple(whitespace, tie("value"), whitespace), { maxLength: 6 }))
    .map(([ws, items]) =>
      items.length === 0 ? `[${ws}]` : `[${items.map(([a, v, b]) => `${a}${v}${b}`).join(",")}]`,
    ),
  object: fc
    .tuple(
      whitespace,
      fc.array(
        fc.tuple(
          whitespace,
          objectKey,
          fc.boolean(),
          whitespace,
          whitespace,
          tie("value"),
          whitespace,
        ),
        { maxLength: 6 },
      ),
    )
    .map(([ws, entries]) =>
      entries.length === 0
        ? `{${ws}}`
        : `{${entries
            .map(
              ([a, key, escaped, b, c, value, d]) =>
                `${a}${jsonKeyText(key, escaped)}${b}:${c}${value}${d}`,
            )
            .join(",")}}`,
    ),
})).value;

/** Nesting far beyond anything real: `[[[…]]]`, `{"a":{"a":…}}` or a mix, thousands deep. */
export const deepJsonText = fc
  .tuple(fc.integer({ min: 1, max: 12_000 }), fc.constantFrom("array", "object", "mixed"))
  .map(([depth, shape]) => deepText(depth, shape));

export function deepText(depth: number, shape: "array" | "object" | "mixed"): string {
  const open: string[] = [];
  const close: string[] = [];
  for (let i = 0; i < depth; i++) {
    const array = shape === "array" || (shape === "mixed" && i % 2 === 0);
    open.push(array ? "[" : '{"a":');
    close.push(array ? "]" : "}");
  }
  return `${open.join("")}1${close.reverse().join("")}`;
}

/** JSON-RPC ids the spec allows, as values. */
export const validId = fc.oneof(
  fc.integer(),
  fc.string({ unit: hostileChar, maxLength: 12 }),
  fc.constant(null),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/**
 * A method name the gateway accepts: usually realistic, sometimes any printable ASCII without
 * spaces, quotes or backslashes (the gateway refuses anything else as -32600).
 */
export const methodName = fc.oneof(
  fc.constantFrom(
    "eth_chainId",
    "eth_blockNumber",
    "net_version",
    "eth_getBalance",
    "eth_getBlockByNumber",
    "web3_clientVersion",
    "admin_peers",
    "personal_listAccounts",
    "miner_stop",
    "engine_getPayloadV1",
    "debug_setHead",
  ),
  fc.stringMatching(/^[\x21\x23-\x5b\x5d-\x7e]{1,40}$/),
);

export interface CallSpec {
  readonly id?: unknown;
  readonly hasId: boolean;
  readonly method: string;
  readonly params?: unknown;
  readonly hasParams: boolean;
}

/**
 * A valid JSON-RPC 2.0 call (id and params optional; `jsonrpc` required, as nodes require it).
 * Valid means valid Unicode too: a lone surrogate anywhere makes the gateway refuse the call.
 */
export const callSpec: fc.Arbitrary<CallSpec> = fc
  .record({
    id: validId,
    hasId: fc.boolean(),
    method: methodName,
    params: fc.oneof(
      fc.array(jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
      fc.dictionary(fc.string({ maxLength: 6 }).map(withoutBackslash), jsonValue({ maxDepth: 2 }), {
        maxKeys: 3,
      }),
    ),
    hasParams: fc.boolean(),
  })
  .filter((spec) => !/\\u[dD][89a-fA-F]/.test(JSON.stringify([spec.id, spec.params])));

/** The call as JSON text, members in a shuffled order with random whitespace. */
export function callText(spec: CallSpec, order: readonly number[], ws: readonly string[]): string {
  const members: string[] = [];
  members.push(`"jsonrpc":${pick(ws, 0)}"2.0"`);
  if (spec.hasId) members.push(`"id":${pick(ws, 1)}${JSON.stringify(spec.id)}`);
  members.push(`"method":${pick(ws, 2)}${JSON.stringify(spec.method)}`);
  if (spec.hasParams) members.push(`"params":${pick(ws, 3)}${JSON.stringify(spec.params)}`);
  // A random member order: each member sorts by its own random key.
  const shuffled = members
    .map((member, index) => ({ member, rank: order[index] ?? 0 }))
    .sort((a, b) => a.rank - b.rank)
    .map(({ member }) => member);
  return `${pick(ws, 4)}{${pick(ws, 5)}${shuffled.join(`${pick(ws, 6)},${pick(ws, 7)}`)}${pick(ws, 8)}}${pick(ws, 9)}`;
}

export const callTextArb: fc.Arbitrary<{ spec: CallSpec; text: string }> = fc
  .tuple(
    callSpec,
    fc.array(fc.nat(99), { minLength: 4, maxLength: 4 }),
    fc.array(whitespace, { minLength: 10, maxLength: 10 }),
  )
  .map(([spec, order, ws]) => ({ spec, text: callText(spec, order, ws) }));

function pick(values: readonly string[], index: number): string {
  return values[index] ?? "";
}

/** Own keys of the built-in prototypes, to detect pollution after a run. */
export function prototypeSnapshot(): string {
  const describe = (target: object) =>
    Reflect.ownKeys(target)
      .map((key) => String(key))
      .sort()
      .join(",");
  return [Object.prototype, Array.prototype, Function.prototype, String.prototype]
    .map(describe)
    .join("|");
}

export function assertNotPolluted(before: string): void {
  const after = prototypeSnapshot();
  if (after !== before) throw new Error(`a built-in prototype changed: ${after}`);
  const probe: Record<string, unknown> = {};
  if (Object.getPrototypeOf(probe) !== Object.prototype) throw new Error("{} lost its prototype");
  for (const key of ["polluted", "id", "method", "a", "isAdmin"]) {
    if (key in probe) throw new Error(`Object.prototype gained "${key}"`);
  }
}
