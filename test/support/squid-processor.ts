/**
 * A subsquid squid, run as its own process (`EvmBatchProcessor.run` owns the process: it exits
 * on a fatal error), as `squid-supervisor.ts` starts it: the contract's logs from a block on,
 * through one RPC endpoint, close to the head (1 confirmation), into a database that supports
 * hot blocks as subsquid's own TypeORM store does. The database is a journal file of JSON
 * lines, so a squid restarted after a crash goes on where it stopped, as it does on Postgres.
 *
 * Arguments: <rpc url> <contract address> <first block> <journal path>.
 */
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { EvmBatchProcessor } from "@subsquid/evm-processor";
import {
  type FinalTxInfo,
  type HashAndHeight,
  type HotDatabase,
  type HotDatabaseState,
  type HotTxInfo,
  PrometheusServer,
} from "@subsquid/util-internal-processor-tools";

export interface JournalLog {
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly logIndex: number;
  readonly transactionHash: string;
}

/** One committed transaction of the squid's database. */
export type JournalEntry =
  | {
      readonly kind: "final";
      readonly prev: HashAndHeight;
      readonly next: HashAndHeight;
      readonly logs: JournalLog[];
    }
  | {
      readonly kind: "hot";
      readonly finalized: HashAndHeight;
      readonly base: HashAndHeight;
      readonly blocks: HashAndHeight[];
      readonly logs: JournalLog[];
    };

/** What a handler writes to: the logs of the blocks it is given. */
interface LogStore {
  readonly logs: JournalLog[];
}

const [url, contract, firstBlock, journal] = process.argv.slice(2);
if (
  url === undefined ||
  contract === undefined ||
  firstBlock === undefined ||
  journal === undefined
) {
  throw new Error("usage: squid-processor.ts <rpc url> <contract> <first block> <journal>");
}

/** The squid's state as its last committed transaction left it. */
function restore(): HotDatabaseState {
  let finalized: HashAndHeight = { height: -1, hash: "0x" };
  let top: HashAndHeight[] = [];
  if (!existsSync(journal as string)) return { ...finalized, top };
  for (const line of readFileSync(journal as string, "utf8").split("\n")) {
    if (line === "") continue;
    const entry = JSON.parse(line) as JournalEntry;
    if (entry.kind === "final") {
      finalized = entry.next;
      top = [];
    } else {
      top = [...top.filter((block) => block.height <= entry.base.height), ...entry.blocks];
      finalized = entry.finalized.height > finalized.height ? entry.finalized : finalized;
      top = top.filter((block) => block.height > finalized.height);
    }
  }
  return { ...finalized, top };
}

const commit = (entry: JournalEntry) =>
  appendFileSync(journal as string, `${JSON.stringify(entry)}\n`);

const database: HotDatabase<LogStore> = {
  supportsHotBlocks: true,
  connect: async () => restore(),
  async transact(info: FinalTxInfo, cb: (store: LogStore) => Promise<void>) {
    const store: LogStore = { logs: [] };
    await cb(store);
    commit({ kind: "final", prev: info.prevHead, next: info.nextHead, logs: store.logs });
  },
  async transactHot(info: HotTxInfo, cb: (store: LogStore, block: HashAndHeight) => Promise<void>) {
    const store: LogStore = { logs: [] };
    for (const block of info.newBlocks) await cb(store, block);
    commit({
      kind: "hot",
      finalized: info.finalizedHead,
      base: info.baseHead,
      blocks: info.newBlocks,
      logs: store.logs,
    });
  },
  async transactHot2(
    info: HotTxInfo,
    cb: (store: LogStore, start: number, end: number) => Promise<void>,
  ) {
    const store: LogStore = { logs: [] };
    await cb(store, 0, info.newBlocks.length);
    commit({
      kind: "hot",
      finalized: info.finalizedHead,
      base: info.baseHead,
      blocks: info.newBlocks,
      logs: store.logs,
    });
  },
};

// The squid's metrics server listens on every interface; nothing here reads it.
PrometheusServer.prototype.serve = async () => ({ port: 0, close: async () => undefined });

new EvmBatchProcessor()
  .setRpcEndpoint({ url, maxBatchCallSize: 100 })
  .setFinalityConfirmation(1)
  .setRpcDataIngestionSettings({ headPollInterval: 500 })
  .setFields({ log: { transactionHash: true } })
  .addLog({ address: [contract.toLowerCase()], range: { from: Number(firstBlock) } })
  .run(database, async (ctx) => {
    for (const block of ctx.blocks) {
      for (const log of block.logs) {
        ctx.store.logs.push({
          blockNumber: block.header.height,
          blockHash: block.header.hash,
          logIndex: log.logIndex,
          transactionHash: log.transactionHash,
        });
      }
    }
  });
