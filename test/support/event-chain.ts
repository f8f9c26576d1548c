import { type Hex, keccak256, parseAbi, toHex } from "viem";
import { type AnvilNode, startAnvil } from "../../local/anvil.ts";
import { deployContract } from "./deploy-contract.ts";

/**
 * A chain with an event in every block, as indexers follow one: anvil mining a block every
 * `blockTimeMs` on a driver's timer, each block holding 1 or 2 calls to a tiny contract that
 * emits `Tick(uint256 indexed n)` with n counting up. The driver can stop sending while the
 * chain goes on (so a scene has a last block with events and blocks after it).
 */

export const TICK_ABI = parseAbi(["event Tick(uint256 indexed n)"]);
export const TICK_EVENT = TICK_ABI[0];
const TICK_TOPIC = keccak256(toHex("Tick(uint256)")).slice(2);
// Runtime: LOG2(topic0 = Tick, topic1 = calldata[0..32]) with no data; STOP. 42 bytes.
const TICK_RUNTIME = `600035${`7f${TICK_TOPIC}`}60006000a200`;
// Init: copy the 42-byte runtime (after these 12 bytes) to memory and return it.
const TICK_INIT: Hex = `0x602a600c600039602a6000f3${TICK_RUNTIME}`;

/**
 * A contract for the dapp flow: its constructor emits `Deployed()`; any call emits `Poked()`
 * and returns the uint256 42, so `value()` reads 42 once the code exists at the block read.
 */
export const DAPP_ABI = parseAbi([
  "function value() view returns (uint256)",
  "event Deployed()",
  "event Poked()",
]);
const DEPLOYED_TOPIC = keccak256(toHex("Deployed()")).slice(2);
const POKED_TOPIC = keccak256(toHex("Poked()")).slice(2);
// LOG1(Poked); MSTORE(0, 42); RETURN(0, 32). 48 bytes.
const DAPP_RUNTIME = `7f${POKED_TOPIC}60006000a1602a60005260206000f3`;
// LOG1(Deployed) (38 bytes), then copy the runtime (at byte 50) and return it (12 bytes).
export const DAPP_BYTECODE: Hex = `0x7f${DEPLOYED_TOPIC}60006000a16030603260003960306000f3${DAPP_RUNTIME}`;

/** A log as the node reports it, with the fields a comparison needs. */
export interface ChainLog {
  readonly blockNumber: number;
  readonly blockHash: string;
  readonly logIndex: number;
  readonly transactionHash: string;
}

export interface EventChain {
  readonly node: AnvilNode;
  readonly contract: Hex;
  /** The block the driver mined last. */
  readonly head: number;
  /** Stops sending calls: the blocks mined from now on hold no events. */
  stopEvents(): void;
  /** The contract's logs from the node itself, for blocks `from`..`to`. */
  logs(from: number, to: number): Promise<ChainLog[]>;
  /** Stops the driver and the node. */
  close(): Promise<void>;
}

const hex = (n: number) => `0x${n.toString(16)}`;

export async function startEventChain(options: {
  readonly chainId: number;
  readonly blockTimeMs: number;
}): Promise<EventChain> {
  const node = await startAnvil({ chainId: options.chainId });
  try {
    const [from] = await node.rpc<string[]>("eth_accounts");
    if (from === undefined) throw new Error("the node has no unlocked account");
    const contract = await deployContract(node, from, TICK_INIT);
    await node.rpc("evm_setAutomine", [false]);
    let head = Number.parseInt(await node.rpc<string>("eth_blockNumber"), 16);
    let sending = true;
    let running = true;
    let n = 0;
    const mineOne = async () => {
      if (sending) {
        const calls = 1 + (head % 2);
        for (let call = 0; call < calls; call++) {
          await node.rpc("eth_sendTransaction", [
            {
              from,
              to: contract,
              data: `0x${(++n).toString(16).padStart(64, "0")}`,
              gas: "0x20000",
            },
          ]);
        }
      }
      await node.rpc("evm_mine");
      head++;
    };
    const driver = (async () => {
      for (let next = Date.now(); running; ) {
        next += options.blockTimeMs;
        await mineOne();
        const wait = next - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
    })();
    return {
      node,
      contract,
      get head() {
        return head;
      },
      stopEvents() {
        sending = false;
      },
      async logs(fromBlock, toBlock) {
        const logs = await node.rpc<Array<Record<string, string>>>("eth_getLogs", [
          { address: contract, fromBlock: hex(fromBlock), toBlock: hex(toBlock) },
        ]);
        return logs.map(chainLog);
      },
      async close() {
        running = false;
        await driver.catch(() => undefined);
        await node.stop();
      },
    };
  } catch (error) {
    await node.stop();
    throw error;
  }
}

/** The comparison fields of a log as a node or a client reports it (numbers or hex). */
export function chainLog(log: {
  readonly blockNumber?: unknown;
  readonly blockHash?: unknown;
  readonly logIndex?: unknown;
  readonly transactionHash?: unknown;
}): ChainLog {
  return {
    blockNumber: Number(log.blockNumber),
    blockHash: String(log.blockHash),
    logIndex: Number(log.logIndex),
    transactionHash: String(log.transactionHash),
  };
}
