import {
  type FrontAnswer,
  type FrontCall,
  type LyingFront,
  startLyingFront,
} from "./lying-front.ts";

/**
 * Providers as separate nodes look, though one anvil node stands behind them all: each keeps
 * the filters installed through it (another provider answers "filter not found" for them, as
 * a different node would) and reports a log filter's changes as geth does, only logs within
 * its numeric `fromBlock`..`toBlock` (anvil reports every new log); a troubled one has the
 * everyday faults of a real provider.
 */

const INSTALLS = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_newPendingTransactionFilter",
]);
const FILTER_USES = new Set(["eth_getFilterChanges", "eth_getFilterLogs", "eth_uninstallFilter"]);
const FILTER_NOT_FOUND: FrontAnswer = { error: { code: -32000, message: "filter not found" } };

export interface ProviderFront extends LyingFront {
  /** Calls received, by method. */
  readonly seen: ReadonlyMap<string, number>;
}

/**
 * The faults of a troubled provider (docs/behaviour.md §12.10 and issue 25's scene):
 * - `logIndexLagBlocks`: its log index trails its head, so a log query touching its newest
 *   this many blocks answers `[]` (the whole answer), while heads and blocks are current;
 * - `lagSteps`, `stepMs`: it is a load balancer over two backends taking requests in turn, one
 *   current and one behind by `lagSteps[i]` blocks (the next step every `stepMs`), which
 *   answers as a node at its own head does: a lower `eth_blockNumber`, null for blocks above
 *   it, `latest` as its head, log ranges clamped to it silently, "header not found" for state
 *   at a block above it.
 */
export interface Troubles {
  readonly logIndexLagBlocks: number;
  readonly lagSteps: readonly number[];
  readonly stepMs: number;
}

const hex = (n: number) => `0x${n.toString(16)}`;

/** A provider with no fault of its own. */
export function startHonestFront(nodeUrl: string): Promise<ProviderFront> {
  return startProviderFront(nodeUrl, null);
}

export function startTroubledFront(nodeUrl: string, troubles: Troubles): Promise<ProviderFront> {
  return startProviderFront(nodeUrl, troubles);
}

/**
 * A provider whose node falls `lag` blocks behind the chain while a test says so (0: current),
 * and answers as a node at its own head does (null above it, logs up to it).
 */
export async function startLaggingFront(nodeUrl: string): Promise<LyingFront & { lag: number }> {
  const nodeHead = headReader(nodeUrl);
  const state = { lag: 0 };
  const front = await startLyingFront(nodeUrl, async (call, forward) => {
    if (state.lag === 0) return forward();
    return answerAt(call, forward, { head: (await nodeHead()) - state.lag, logIndexLag: 0 });
  });
  return Object.assign(state, front);
}

async function startProviderFront(
  nodeUrl: string,
  troubles: Troubles | null,
): Promise<ProviderFront> {
  const seen = new Map<string, number>();
  /** Installed filters by id, with a log filter's numeric bounds (a tag bounds nothing). */
  const filters = new Map<string, { from: number; to: number }>();
  const nodeHead = headReader(nodeUrl);
  const front = await startLyingFront(nodeUrl, async (call, forward, request) => {
    seen.set(call.method, (seen.get(call.method) ?? 0) + 1);
    if (FILTER_USES.has(call.method)) {
      const id = String((call.params as unknown[] | undefined)?.[0]);
      const bounds = filters.get(id);
      if (bounds === undefined) return FILTER_NOT_FOUND;
      if (call.method === "eth_uninstallFilter") filters.delete(id);
      const answer = await forward();
      if (!Array.isArray(answer.result)) return answer;
      return {
        result: (answer.result as unknown[]).filter((item) => {
          if (typeof item !== "object" || item === null) return true;
          const block = Number((item as { blockNumber?: unknown }).blockNumber);
          return block >= bounds.from && block <= bounds.to;
        }),
      };
    }
    if (INSTALLS.has(call.method)) {
      const answer = await forward();
      if (typeof answer.result === "string") filters.set(answer.result, boundsOf(call));
      return answer;
    }
    if (troubles === null) return forward();
    const head = await nodeHead();
    const lagging = request.index % 2 === 1;
    const lag = lagging
      ? (troubles.lagSteps[Math.floor(Date.now() / troubles.stepMs) % troubles.lagSteps.length] ??
        0)
      : 0;
    return answerAt(call, forward, { head: head - lag, logIndexLag: troubles.logIndexLagBlocks });
  });
  return Object.assign(front, { seen });
}

function boundsOf(call: FrontCall): { from: number; to: number } {
  const filter = ((call.params as unknown[] | undefined)?.[0] ?? {}) as Record<string, unknown>;
  const bound = (tag: unknown, otherwise: number) =>
    typeof tag === "string" && /^0x[0-9a-f]+$/i.test(tag) ? Number(tag) : otherwise;
  return { from: bound(filter.fromBlock, 0), to: bound(filter.toBlock, Number.POSITIVE_INFINITY) };
}

interface Backend {
  /** The highest block this backend has. */
  readonly head: number;
  readonly logIndexLag: number;
}

/** Block parameter positions of the state methods a lagging backend cannot serve above its head. */
const STATE_BLOCK_PARAM: Readonly<Record<string, number>> = {
  eth_call: 1,
  eth_estimateGas: 1,
  eth_getBalance: 1,
  eth_getCode: 1,
  eth_getTransactionCount: 1,
  eth_getStorageAt: 2,
};
const BY_HASH = new Set([
  "eth_getBlockByHash",
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
]);

/** A call as a node at `backend.head` answers it, with the node itself further on. */
async function answerAt(
  call: FrontCall,
  forward: (instead?: FrontCall) => Promise<FrontAnswer>,
  backend: Backend,
): Promise<FrontAnswer> {
  const params = Array.isArray(call.params) ? [...(call.params as unknown[])] : [];
  const blockOf = (tag: unknown): number | "pending" => {
    if (tag === undefined || tag === "latest" || tag === "safe" || tag === "finalized") {
      return backend.head;
    }
    if (tag === "pending") return "pending";
    if (tag === "earliest") return 0;
    return Number(tag);
  };
  switch (call.method) {
    case "eth_blockNumber":
      return { result: hex(backend.head) };
    case "eth_getBlockByNumber": {
      const block = blockOf(params[0]);
      if (block === "pending") return forward();
      if (block > backend.head) return { result: null };
      return forward({ ...call, params: [hex(block), ...params.slice(1)] });
    }
    case "eth_getLogs":
      return logsAt(call, params, forward, backend, blockOf);
  }
  if (BY_HASH.has(call.method)) {
    const answer = await forward();
    const result = answer.result as { number?: unknown; blockNumber?: unknown } | null | undefined;
    const block = Number(result?.blockNumber ?? result?.number ?? Number.NaN);
    return block > backend.head ? { result: null } : answer;
  }
  const position = STATE_BLOCK_PARAM[call.method];
  if (position !== undefined) {
    const block = blockOf(params[position]);
    if (block === "pending") return forward();
    if (block > backend.head) return { error: { code: -32000, message: "header not found" } };
    params[position] = hex(block);
    return forward({ ...call, params });
  }
  return forward();
}

async function logsAt(
  call: FrontCall,
  params: unknown[],
  forward: (instead?: FrontCall) => Promise<FrontAnswer>,
  backend: Backend,
  blockOf: (tag: unknown) => number | "pending",
): Promise<FrontAnswer> {
  const filter = (params[0] ?? {}) as Record<string, unknown>;
  const indexedUpTo = backend.head - backend.logIndexLag;
  if (typeof filter.blockHash === "string") {
    const block = await forward({
      id: 1,
      method: "eth_getBlockByHash",
      params: [filter.blockHash, false],
    });
    const number = Number((block.result as { number?: unknown } | null)?.number ?? Number.NaN);
    return number > indexedUpTo ? { result: [] } : forward();
  }
  const from = blockOf(filter.fromBlock);
  const to = blockOf(filter.toBlock);
  if (from === "pending" || to === "pending") return forward();
  // The clamp: a range past this backend's head is answered up to it, and nothing says so.
  const clamped = Math.min(to, backend.head);
  if (clamped > indexedUpTo) return { result: [] };
  if (from > clamped) return { result: [] };
  return forward({ ...call, params: [{ ...filter, fromBlock: hex(from), toBlock: hex(clamped) }] });
}

/** The node's head, read at most every 100 ms (a troubled front asks it on most requests). */
function headReader(nodeUrl: string): () => Promise<number> {
  let cached: { at: number; head: Promise<number> } | null = null;
  return () => {
    const now = Date.now();
    if (cached === null || now - cached.at > 100) {
      const head = fetch(nodeUrl, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}',
      })
        .then((response) => response.json() as Promise<{ result: string }>)
        .then((answer) => Number.parseInt(answer.result, 16));
      cached = { at: now, head };
      head.catch(() => {
        cached = null;
      });
    }
    return cached.head;
  };
}
