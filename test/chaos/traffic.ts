import { setTimeout as sleep } from "node:timers/promises";
import { BaseError, createPublicClient, type Hex, http, type PublicClient, parseEther } from "viem";
import { foundry } from "viem/chains";
import { CHAIN_ID } from "./config.ts";
import type { SecretScanner } from "./secrets.ts";

/**
 * The client side of a scenario: a few viem clients, each sending a stream of mixed reads
 * (block number, latest block, a block by number, logs, eth_call, balance, chain id, and
 * batches of those through `http(url, { batch: true })`) one after another. Every HTTP
 * exchange is recorded with the gateway's diagnostic headers, and every answer is checked
 * against what the chain must say.
 */

export type OpKind =
  | "blockNumber"
  | "blockLatest"
  | "blockByNumber"
  | "logs"
  | "call"
  | "balance"
  | "chainId"
  | "batch";

export const OP_KINDS: readonly OpKind[] = [
  "blockNumber",
  "batch",
  "blockLatest",
  "call",
  "blockByNumber",
  "balance",
  "logs",
  "chainId",
];

/** Calls in one `batch` op. */
export const BATCH_CALLS = 5;

/** One HTTP request to the gateway, as the client saw it. */
export interface Exchange {
  /** 0 when no HTTP answer came (connection error, client timeout). */
  readonly status: number;
  /** `x-gateway-provider`: the providers that answered, in order of use. */
  readonly providers: readonly string[];
  /** `x-gateway-attempts`. */
  readonly attempts: number;
  readonly body: string;
  readonly error: string | null;
  readonly ms: number;
}

/** A log, as the chaos check compares them: block, index in the block, transaction. */
export function logKey(log: {
  blockNumber: unknown;
  logIndex: unknown;
  transactionHash: unknown;
}): string {
  return `${Number(log.blockNumber)}:${Number(log.logIndex)}:${String(log.transactionHash).toLowerCase()}`;
}

/** One client operation: one viem call, or one batch of calls (one HTTP request either way). */
export interface OpRecord {
  readonly worker: number;
  readonly seq: number;
  readonly kind: OpKind;
  readonly calls: number;
  /** ms since the epoch. */
  readonly start: number;
  readonly end: number;
  /** The viem call resolved. */
  readonly resolved: boolean;
  /** Why the viem call threw. */
  readonly error: string | null;
  /** The answer resolved but is not what the chain says (wrong chain id, balance, call data…). */
  readonly wrong: string | null;
  readonly exchanges: readonly Exchange[];
  /** Block timestamps (s) of the latest blocks in the answer, for the staleness check. */
  readonly latestTimestamps: readonly number[];
  /** A log op's range and the logs the answer held, compared with the node's once over. */
  readonly logQuery: LogQueryRecord | null;
}

export interface LogQueryRecord {
  readonly from: number;
  readonly to: number;
  /** `logKey` of each log, in the answer's order. */
  readonly logs: readonly string[];
}

export function succeeded(op: OpRecord): boolean {
  return op.resolved && op.wrong === null;
}

/** Every provider that answered any part of the op. */
export function providersOf(op: OpRecord): string[] {
  return [...new Set(op.exchanges.flatMap((exchange) => exchange.providers))];
}

export function attemptsOf(op: OpRecord): number {
  return op.exchanges.reduce((sum, exchange) => sum + exchange.attempts, 0);
}

export interface TrafficOptions {
  /** The network's endpoint: `${stack.url}/${network}`. */
  readonly url: string;
  readonly workers: number;
  /** Pause between two ops of one worker. */
  readonly pauseMs: number;
  /** No op starts once this many have started. */
  readonly maxOps: number;
  /** viem's own timeout: an op that takes longer is a hang. */
  readonly clientTimeoutMs: number;
  /** A block every healthy node has (for getBlock by number and getLogs). */
  readonly settledBlock: () => bigint | null;
  readonly scanner: SecretScanner;
}

const DEV_ACCOUNT = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
const DEV_BALANCE = parseEther("10000");
/** The identity precompile: eth_call returns its input, so every answer can be checked. */
const IDENTITY = "0x0000000000000000000000000000000000000004";

interface WorkerClients {
  readonly single: PublicClient;
  readonly batched: PublicClient;
  /** The exchanges of the op in progress (a worker runs one op at a time). */
  readonly holder: { exchanges: Exchange[] };
}

export class Traffic {
  readonly ops: OpRecord[] = [];
  readonly #options: TrafficOptions;
  #started = 0;
  #stopped = false;
  #running: Promise<void>[] = [];
  #sentinel: WorkerClients | undefined;

  constructor(options: TrafficOptions) {
    this.#options = options;
  }

  start(): void {
    for (let worker = 0; worker < this.#options.workers; worker++) {
      this.#running.push(this.#loop(worker));
    }
  }

  /** Lets every worker finish the op it is on. */
  async stop(): Promise<void> {
    this.#stopped = true;
    await Promise.all(this.#running);
  }

  /** Sends one op now, outside the workers' streams (worker -1), and records it. */
  async runOnce(kind: OpKind): Promise<OpRecord> {
    this.#sentinel ??= this.#clients();
    const op = await this.#run(this.#sentinel, -1, this.#started++, kind);
    this.ops.push(op);
    return op;
  }

  /** True once `maxOps` ops have started: the stream is over. */
  get exhausted(): boolean {
    return this.#started >= this.#options.maxOps;
  }

  async #loop(worker: number): Promise<void> {
    const clients = this.#clients();
    let turn = worker * 3;
    while (!this.#stopped && this.#started < this.#options.maxOps) {
      const seq = this.#started++;
      const kind = OP_KINDS[turn++ % OP_KINDS.length] ?? "blockNumber";
      this.ops.push(await this.#run(clients, worker, seq, kind));
      if (this.#options.pauseMs > 0) await sleep(this.#options.pauseMs);
    }
  }

  #clients(): WorkerClients {
    const { url, clientTimeoutMs, scanner } = this.#options;
    const holder: { exchanges: Exchange[] } = { exchanges: [] };
    const fetchFn = async (input: string | URL | Request, init?: RequestInit) => {
      const started = Date.now();
      let response: Response;
      try {
        response = await fetch(input, init);
      } catch (error) {
        holder.exchanges.push({
          status: 0,
          providers: [],
          attempts: 0,
          body: "",
          error: errorText(error),
          ms: Date.now() - started,
        });
        throw error;
      }
      const body = await response.clone().text();
      scanner.scan("responses", body);
      for (const [name, value] of response.headers) scanner.scan("responses", `${name}: ${value}`);
      const providers = response.headers.get("x-gateway-provider");
      holder.exchanges.push({
        status: response.status,
        providers: providers ? providers.split(",").filter((name) => name.length > 0) : [],
        attempts: Number(response.headers.get("x-gateway-attempts") ?? 0),
        body: body.length > 2_000 ? `${body.slice(0, 2_000)}…` : body,
        error: null,
        ms: Date.now() - started,
      });
      return response;
    };
    const client = (batch: boolean) =>
      createPublicClient({
        chain: foundry,
        cacheTime: 0,
        transport: http(url, { batch, retryCount: 0, timeout: clientTimeoutMs, fetchFn }),
      });
    return { single: client(false), batched: client(true), holder };
  }

  async #run(clients: WorkerClients, worker: number, seq: number, kind: OpKind): Promise<OpRecord> {
    clients.holder.exchanges = [];
    const start = Date.now();
    let resolved = false;
    let error: string | null = null;
    let outcome: CallOutcome = { wrong: null, latest: [] };
    try {
      outcome = await this.#call(clients, kind, seq);
      resolved = true;
    } catch (thrown) {
      error = errorText(thrown);
      this.#options.scanner.scan("responses", error);
    }
    return {
      worker,
      seq,
      kind,
      calls: kind === "batch" ? BATCH_CALLS : 1,
      start,
      end: Date.now(),
      resolved,
      error,
      wrong: outcome.wrong,
      exchanges: clients.holder.exchanges,
      latestTimestamps: outcome.latest,
      logQuery: outcome.logQuery ?? null,
    };
  }

  /** Sends one op and checks its answer. */
  async #call(clients: WorkerClients, kind: OpKind, seq: number): Promise<CallOutcome> {
    const { single, batched } = clients;
    const data = `0x${seq.toString(16).padStart(8, "0")}c4a0` as Hex;
    const ok = { wrong: null, latest: [] as number[] };
    switch (kind) {
      case "blockNumber":
        await single.getBlockNumber({ cacheTime: 0 });
        return ok;
      case "blockLatest": {
        const block = await single.getBlock({ blockTag: "latest" });
        return { wrong: null, latest: [Number(block.timestamp)] };
      }
      case "blockByNumber": {
        const wanted = this.#options.settledBlock();
        const block = await (wanted === null
          ? single.getBlock({ blockTag: "latest" })
          : single.getBlock({ blockNumber: wanted }));
        if (wanted !== null && block.number !== wanted) {
          return { wrong: `block ${block.number} for ${wanted}`, latest: [] };
        }
        return ok;
      }
      case "logs": {
        const to = this.#options.settledBlock() ?? 0n;
        const from = to > 3n ? to - 3n : 0n;
        const logs = await single.getLogs({ fromBlock: from, toBlock: to });
        if (!Array.isArray(logs)) return { wrong: "logs are not an array", latest: [] };
        const logQuery = { from: Number(from), to: Number(to), logs: logs.map(logKey) };
        return { wrong: null, latest: [], logQuery };
      }
      case "call":
        return { wrong: checkCall(await single.call({ to: IDENTITY, data }), data), latest: [] };
      case "balance":
        return {
          wrong: checkBalance(await single.getBalance({ address: DEV_ACCOUNT })),
          latest: [],
        };
      case "chainId":
        return { wrong: checkChainId(await single.getChainId()), latest: [] };
      case "batch": {
        const [, block, balance, call, chainId] = await Promise.all([
          batched.getBlockNumber({ cacheTime: 0 }),
          batched.getBlock({ blockTag: "latest" }),
          batched.getBalance({ address: DEV_ACCOUNT }),
          batched.call({ to: IDENTITY, data }),
          batched.getChainId(),
        ]);
        const wrong =
          [checkBalance(balance), checkCall(call, data), checkChainId(chainId)]
            .filter((problem) => problem !== null)
            .join("; ") || null;
        return { wrong, latest: [Number(block.timestamp)] };
      }
    }
  }
}

interface CallOutcome {
  readonly wrong: string | null;
  readonly latest: number[];
  readonly logQuery?: LogQueryRecord;
}

function checkCall(answer: { data?: Hex | undefined }, data: Hex): string | null {
  return answer.data?.toLowerCase() === data.toLowerCase()
    ? null
    : `eth_call returned ${String(answer.data).slice(0, 40)}, not its input`;
}

function checkBalance(balance: bigint): string | null {
  return balance === DEV_BALANCE ? null : `balance ${balance}, not ${DEV_BALANCE}`;
}

function checkChainId(chainId: number): string | null {
  return chainId === CHAIN_ID ? null : `chain id ${chainId}, not ${CHAIN_ID}`;
}

export function errorText(error: unknown): string {
  if (error instanceof BaseError) {
    const details = error.details ? `: ${error.details}` : "";
    return `${error.name}: ${error.shortMessage}${details}`.slice(0, 400);
  }
  return error instanceof Error ? `${error.name}: ${error.message}`.slice(0, 400) : String(error);
}
