import { once } from "node:events";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** One recorded call: the raw `>>` and `<<` lines (without the markers). */
export interface RecordedExchange {
  request: string;
  response: string;
}

export interface ExecutionApisFixture {
  /** Path below `tests/`, with "/" separators, e.g. "eth_chainId/get-chain-id.io". */
  file: string;
  /** `// speconly:` files: a client's answer is only checked against the schema upstream. */
  specOnly: boolean;
  exchanges: RecordedExchange[];
}

export interface ReplayUpstream {
  readonly url: string;
  close(): Promise<void>;
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * The ethereum/execution-apis fixtures (CC0), vendored in `test/fixtures/` so any checkout can
 * run the transparency test; the path is taken from the repository root, not the working
 * directory. `EXECUTION_APIS_FIXTURES` overrides it.
 */
export function executionApisFixturesDir(): string {
  const dir =
    process.env.EXECUTION_APIS_FIXTURES ?? resolve(REPO_ROOT, "test/fixtures/execution-apis");
  if (!existsSync(join(dir, "tests"))) {
    throw new Error(
      `execution-apis fixtures not found at ${dir} (expected test/fixtures/execution-apis, or set EXECUTION_APIS_FIXTURES)`,
    );
  }
  return dir;
}

export function parseIoFile(file: string, text: string): ExecutionApisFixture {
  const exchanges: RecordedExchange[] = [];
  let specOnly = false;
  let pendingRequest: string | undefined;
  for (const [index, rawLine] of text.split("\n").entries()) {
    const line = rawLine.trim();
    if (line === "") continue;
    if (line.startsWith("//")) {
      if (line.slice(2).trimStart().startsWith("speconly:")) specOnly = true;
      continue;
    }
    const where = `${file}:${index + 1}`;
    if (line.startsWith(">>")) {
      if (pendingRequest !== undefined) throw new Error(`${where}: request without a response`);
      pendingRequest = line.slice(2).trim();
    } else if (line.startsWith("<<")) {
      if (pendingRequest === undefined) throw new Error(`${where}: response without a request`);
      exchanges.push({ request: pendingRequest, response: line.slice(2).trim() });
      pendingRequest = undefined;
    } else {
      throw new Error(`${where}: unexpected line ${JSON.stringify(line.slice(0, 40))}`);
    }
  }
  if (pendingRequest !== undefined) throw new Error(`${file}: request without a response`);
  return { file, specOnly, exchanges };
}

/** Every `tests/**\/*.io` file, sorted by path. */
export function loadExecutionApisFixtures(
  dir = executionApisFixturesDir(),
): ExecutionApisFixture[] {
  const testsDir = join(dir, "tests");
  return readdirSync(testsDir, { recursive: true, encoding: "utf8" })
    .filter((entry) => entry.endsWith(".io"))
    .sort()
    .map((entry) =>
      parseIoFile(entry.split(sep).join("/"), readFileSync(join(testsDir, entry), "utf8")),
    );
}

/**
 * An upstream stand-in that answers each JSON-RPC call with the recorded response whose request
 * has the same method and params (ids ignored), byte for byte except that the caller's id is
 * put back. Batches get an array; calls without a recording get -32601 "no recording".
 */
export async function startReplayUpstream(
  exchanges: readonly RecordedExchange[],
): Promise<ReplayUpstream> {
  const recordings = new Map<string, string>();
  for (const { request, response } of exchanges) {
    const key = callKey(JSON.parse(request));
    if (!recordings.has(key)) recordings.set(key, response);
  }

  const answer = (call: unknown): string => {
    const id = JSON.stringify((call as { id?: unknown } | null)?.id ?? null);
    const recorded = recordings.get(callKey(call));
    return recorded === undefined
      ? `{"jsonrpc":"2.0","id":${id},"error":{"code":-32601,"message":"no recording"}}`
      : withId(recorded, id);
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: string;
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      body = Array.isArray(parsed) ? `[${parsed.map(answer).join(",")}]` : answer(parsed);
    } catch {
      body = '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}';
    }
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeAllConnections();
      }),
  };
}

/** Method plus params in a key-order-independent form; absent params equal []. */
function callKey(call: unknown): string {
  const { method, params } = (call ?? {}) as { method?: unknown; params?: unknown };
  return canonicalJson([method ?? null, params ?? []]);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Replaces the top-level "id" member's value in the JSON text without re-serialising the rest,
 * so recorded bytes (escapes such as \u003c, number spellings) reach the caller unchanged.
 */
function withId(json: string, idJson: string): string {
  let depth = 0;
  let expectingKey = false;
  for (let index = 0; index < json.length; index++) {
    const char = json[index];
    if (char === '"') {
      const end = stringEnd(json, index);
      if (depth === 1 && expectingKey) {
        const key: unknown = JSON.parse(json.slice(index, end));
        const valueStart = skipSeparator(json, end);
        if (key === "id") {
          return json.slice(0, valueStart) + idJson + json.slice(valueEnd(json, valueStart));
        }
        expectingKey = false;
        index = valueStart - 1;
      } else {
        index = end - 1;
      }
    } else if (char === "{" || char === "[") {
      depth++;
      expectingKey = char === "{" && depth === 1;
    } else if (char === "}" || char === "]") {
      depth--;
    } else if (char === "," && depth === 1) {
      expectingKey = true;
    }
  }
  return json;
}

/** Index just past the string literal that starts at `start`. */
function stringEnd(json: string, start: number): number {
  let index = start + 1;
  while (index < json.length && json[index] !== '"') index += json[index] === "\\" ? 2 : 1;
  return index + 1;
}

/** Index of the value after a key: skips whitespace, the colon, whitespace. */
function skipSeparator(json: string, from: number): number {
  let index = from;
  while (/[\s:]/.test(json[index] ?? "")) index++;
  return index;
}

/** Index just past the JSON value that starts at `start`. */
function valueEnd(json: string, start: number): number {
  const first = json[start];
  if (first === '"') return stringEnd(json, start);
  if (first !== "{" && first !== "[") {
    let index = start;
    while (index < json.length && !/[\s,}\]]/.test(json[index] ?? "")) index++;
    return index;
  }
  let depth = 0;
  let index = start;
  do {
    const char = json[index];
    if (char === '"') {
      index = stringEnd(json, index);
      continue;
    }
    if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") depth--;
    index++;
  } while (depth > 0 && index < json.length);
  return index;
}
