import type { Upstream, UpstreamRequest, UpstreamResult } from "../../functions/core/ports.ts";

/**
 * A chain in memory behind fake providers, for the filter pipeline's unit tests: blocks with
 * hashes chained by `parentHash`, logs of one contract in chosen blocks, reorgs that replace
 * the newest blocks (the replaced ones kept as a side chain a provider may still serve by
 * hash, or forgotten), and providers that answer from it, are down, or refuse wide log ranges
 * in geth's words. Answers are real JSON-RPC texts; time is the test's.
 */

export const CONTRACT = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
export const OTHER = "0x000000000000000000000000000000000000dead";
const TOPIC = `0x${"ab".repeat(32)}`;

export interface FakeBlock {
  readonly number: number;
  readonly hash: string;
  readonly parentHash: string;
  /** Log texts, in log index order. */
  readonly logs: readonly string[];
}

const hex = (n: number) => `0x${n.toString(16)}`;

export class FakeChain {
  readonly blocks: FakeBlock[] = [];
  /** Blocks replaced by reorgs, by hash (a node keeps side blocks a while). */
  readonly side = new Map<string, FakeBlock>();
  #fork = 0;

  constructor(height = 0, fork = 0) {
    this.#fork = fork;
    this.mine(height + 1, 0);
  }

  /** Another chain with the same blocks so far, whose next blocks differ (another fork id). */
  copy(fork: number): FakeChain {
    const other = new FakeChain(-1, fork);
    other.blocks.push(...this.blocks);
    return other;
  }

  get head(): number {
    return (this.blocks.at(-1) as FakeBlock).number;
  }

  /** Mines `count` blocks, each with `logs` logs of the contract (and one of another address). */
  mine(count: number, logs = 1): this {
    for (let index = 0; index < count; index++) this.#append(logs);
    return this;
  }

  /** Replaces the newest `depth` blocks by `depth + grow` new ones with `logs` logs each. */
  reorg(depth: number, options: { logs?: number; grow?: number; forget?: boolean } = {}): this {
    this.#fork++;
    for (const block of this.blocks.splice(this.blocks.length - depth, depth)) {
      if (!options.forget) this.side.set(block.hash, block);
    }
    for (let index = 0; index < depth + (options.grow ?? 0); index++)
      this.#append(options.logs ?? 1);
    return this;
  }

  block(number: number): FakeBlock | undefined {
    return this.blocks[number];
  }

  /** The contract's logs of blocks `from`..`to`, as texts, in chain order. */
  logsOf(from: number, to: number, address: string = CONTRACT): string[] {
    return this.blocks
      .slice(from, to + 1)
      .flatMap((block) => block.logs)
      .filter((text) => text.includes(address));
  }

  #append(logs: number): void {
    const number = this.blocks.length;
    const parentHash = this.blocks.at(-1)?.hash ?? `0x${"0".repeat(64)}`;
    const hash = `0x${this.#fork.toString(16).padStart(8, "0")}${number.toString(16).padStart(56, "0")}`;
    const texts: string[] = [];
    const add = (address: string) =>
      texts.push(
        `{"address":"${address}","topics":["${TOPIC}"],"data":"0x","blockNumber":"${hex(number)}","transactionHash":"0x${(number * 16 + texts.length).toString(16).padStart(64, "0")}","transactionIndex":"0x0","blockHash":"${hash}","logIndex":"${hex(texts.length)}","removed":false}`,
      );
    for (let index = 0; index < logs; index++) add(CONTRACT);
    if (logs > 0) add(OTHER);
    this.blocks.push({ number, hash, parentHash, logs: texts });
  }
}

export interface FakeProvider {
  readonly down?: boolean;
  /** Log spans over this are refused as geth's `-32005 … exceed maximum block range: N`. */
  readonly maxLogsRange?: number;
  /** Answers every eth_getLogs with this error instead. */
  readonly logsError?: { readonly code: number; readonly message: string };
  /** Answers eth_getLogs from this chain instead (a log index on another branch). */
  readonly logsFrom?: FakeChain;
  /** Answers eth_getLogs with every log of the blocks, whatever address was asked for. */
  readonly anyAddress?: boolean;
  /** Answers a log range past its head with the logs up to its head and no error (anvil). */
  readonly clamps?: boolean;
  /** Its eth_blockNumber, when not the chain's head (a provider ahead of its own blocks). */
  readonly claimsHead?: number;
}

interface Call {
  readonly id: unknown;
  readonly method: string;
  readonly params?: unknown[];
}

/** Providers by URL answering from one chain; counts the calls each got, by method. */
export class FakeChainUpstream implements Upstream {
  readonly #providers = new Map<string, FakeProvider>();
  readonly calls: Array<{
    readonly url: string;
    readonly method: string;
    readonly params: unknown;
  }> = [];

  constructor(
    readonly chain: FakeChain,
    readonly advance: (ms: number) => void = () => undefined,
  ) {}

  provider(url: string, provider: FakeProvider = {}): this {
    this.#providers.set(url, provider);
    return this;
  }

  callsOf(method: string, url?: string): number {
    return this.calls.filter(
      (call) => call.method === method && (url === undefined || call.url === url),
    ).length;
  }

  async send(request: UpstreamRequest): Promise<UpstreamResult> {
    this.advance(5);
    const provider = this.#providers.get(request.url);
    const parsed = JSON.parse(request.body) as Call | Call[];
    for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
      this.calls.push({ url: request.url, method: call.method, params: call.params });
    }
    if (provider === undefined || provider.down) {
      return {
        ok: false,
        failure: { kind: "connection", message: "connection: ECONNREFUSED" },
        elapsedMs: 5,
      };
    }
    const one = (call: Call) =>
      JSON.stringify({ jsonrpc: "2.0", id: call.id, ...this.#answer(call, provider) });
    const body = Array.isArray(parsed) ? `[${parsed.map(one).join(",")}]` : one(parsed);
    return { ok: true, status: 200, body, elapsedMs: 5 };
  }

  #answer(call: Call, provider: FakeProvider): { result: unknown } | { error: unknown } {
    const params = call.params ?? [];
    switch (call.method) {
      case "eth_chainId":
        return { result: "0x1" };
      case "eth_blockNumber":
        return { result: hex(provider.claimsHead ?? this.chain.head) };
      case "eth_getBlockByNumber": {
        const at =
          params[0] === "latest" ? this.chain.head : Number.parseInt(String(params[0]), 16);
        const block = this.chain.block(at);
        return {
          result:
            block === undefined
              ? null
              : {
                  number: hex(block.number),
                  hash: block.hash,
                  parentHash: block.parentHash,
                  logsBloom: "0x",
                  transactions: [],
                },
        };
      }
      case "eth_getLogs":
        return this.#logs(params[0] as Record<string, unknown>, provider);
      case "eth_newPendingTransactionFilter":
        return { result: "0x1234" };
      case "eth_getFilterChanges":
        return params[0] === "0x1234"
          ? { result: [] }
          : { error: { code: -32000, message: "filter not found" } };
      default:
        return {
          error: {
            code: -32601,
            message: `the method ${call.method} does not exist/is not available`,
          },
        };
    }
  }

  #logs(
    filter: Record<string, unknown>,
    provider: FakeProvider,
  ): { result: unknown } | { error: unknown } {
    if (provider.logsError) return { error: provider.logsError };
    const matches = (text: string) => {
      const address = filter.address;
      if (address === undefined || address === null || provider.anyAddress) return true;
      const wanted = Array.isArray(address) ? address : [address];
      return wanted.some((one) => text.includes(String(one).toLowerCase()));
    };
    if (typeof filter.blockHash === "string") {
      const block =
        this.chain.blocks.find((candidate) => candidate.hash === filter.blockHash) ??
        this.chain.side.get(filter.blockHash);
      if (block === undefined) return { error: { code: -32000, message: "unknown block" } };
      return { result: block.logs.filter(matches).map((text) => JSON.parse(text)) };
    }
    const from = Number.parseInt(String(filter.fromBlock), 16);
    const asked = Number.parseInt(String(filter.toBlock), 16);
    const to = provider.clamps ? Math.min(asked, this.chain.head) : asked;
    if (to > this.chain.head) {
      return { error: { code: -32602, message: "block range extends beyond current head block" } };
    }
    if (provider.maxLogsRange !== undefined && to - from + 1 > provider.maxLogsRange) {
      return {
        error: { code: -32005, message: `exceed maximum block range: ${provider.maxLogsRange}` },
      };
    }
    const texts = (provider.logsFrom ?? this.chain).blocks
      .slice(from, to + 1)
      .flatMap((block) => block.logs)
      .filter(matches);
    return { result: texts.map((text) => JSON.parse(text)) };
  }
}
