import { describe, expect, it } from "vitest";
import { DEFAULT_METHODS_DENY } from "../../../functions/core/config/config-schema.ts";
import { methodRefusal } from "../../../functions/core/jsonrpc/jsonrpc.ts";
import { KNOWN_METHODS } from "../../../functions/core/methods/catalogue.ts";

/**
 * The default deny list (docs/behaviour.md §8.2): every method that signs with a node's keys,
 * changes a node's state or configuration, or hands out its accounts or mempool is refused
 * unless a config says otherwise; the reads are not.
 */

const refusedByDefault = (method: string) => methodRefusal(method, DEFAULT_METHODS_DENY, undefined);

describe("the default deny list", () => {
  it.each([
    // signing with the node's keys, and the keys it holds
    "eth_sendTransaction",
    // regression: anvil signs with its unlocked account for these too; both spent from it
    // through the gateway (an attack on npm start, 4 containers)
    "eth_sendTransactionSync",
    "eth_sendUnsignedTransaction",
    "eth_resend",
    "priv_distributeRawTransaction",
    "eth_sign",
    "eth_signTransaction",
    "eth_signTypedData",
    "eth_signTypedData_v4",
    "eth_accounts",
    "personal_sign",
    "personal_unlockAccount",
    // development nodes
    "anvil_setBalance",
    "anvil_impersonateAccount",
    "anvil_dumpState",
    "anvil_mine",
    "hardhat_setBalance",
    "hardhat_impersonateAccount",
    "evm_mine",
    "evm_snapshot",
    "evm_revert",
    "evm_increaseTime",
    "tenderly_setBalance",
    // regression: forgotten by the list, found in anvil's, geth's and besu's method tables
    // (an attack on npm start, 4 containers: anvil handed out its accounts to eth_requestAccounts)
    "eth_requestAccounts",
    "eth_pendingTransactions",
    "wallet_sendTransaction",
    "wallet_sendCalls",
    "odyssey_sendTransaction",
    "debug_backtraceAt",
    "debug_sync",
    "les_addBalance",
    "les_setClientParams",
    "eth_submitWork",
    "eth_submitHashrate",
    "db_putString",
    "shh_newIdentity",
    "shh_post",
    "txpool_besuPendingTransactions",
    // the node's administration and runtime
    "admin_addPeer",
    "miner_start",
    "engine_forkchoiceUpdatedV3",
    "debug_setHead",
    "debug_setGCPercent",
    "debug_setTrieFlushInterval",
    "debug_startCPUProfile",
    "debug_stopGoTrace",
    "debug_cpuProfile",
    "debug_writeMemProfile",
    "debug_standardTraceBlockToFile",
    "debug_goTrace",
    "debug_verbosity",
    "debug_vmodule",
    "debug_freeOSMemory",
    "debug_chaindbCompact",
    "debug_resetHead",
    "debug_deleteChainSlice",
    "debug_insertReceipts",
    "debug_migrateReceipts",
    "debug_resyncWorldstate",
    "parity_setEngineSigner",
    "parity_clearEngineSigner",
    "clique_propose",
    "qbft_proposeValidatorVote",
    "ibft_discardValidatorVote",
    "perm_addAccountsToAllowlist",
    "plugins_reloadPluginConfig",
    // the mempool's content
    "txpool_content",
    "txpool_contentFrom",
    "txpool_inspect",
    "txpool_besuTransactions",
    "parity_pendingTransactions",
  ])("refuses %s", (method) => {
    expect(refusedByDefault(method)).toBe("methods_deny");
  });

  it("of the catalogue, refuses exactly the signing, account and mempool-content methods", () => {
    expect(KNOWN_METHODS.filter((method) => refusedByDefault(method) !== null).sort()).toEqual(
      [
        "debug_setHead",
        "eth_accounts",
        "eth_sendTransaction",
        "eth_sign",
        "eth_signTransaction",
        "eth_signTypedData_v4",
        "txpool_content",
        "txpool_contentFrom",
        "txpool_inspect",
      ].sort(),
    );
  });

  it.each([
    "eth_sendRawTransaction",
    "eth_call",
    "debug_traceTransaction",
    "debug_traceCall",
    "debug_getRawBlock",
    "debug_getBadBlocks",
    "debug_storageRangeAt",
    "txpool_status",
    "trace_block",
    "ots_getApiLevel",
    "eth_fillTransaction",
    "parity_chainId",
    "clique_getSigners",
  ])("serves %s", (method) => {
    expect(refusedByDefault(method)).toBeNull();
  });

  it("a network's own methods_deny replaces the default: a devnet may allow what it needs", () => {
    const devnet = DEFAULT_METHODS_DENY.filter((pattern) => pattern !== "evm_*");
    expect(methodRefusal("evm_mine", devnet, undefined)).toBeNull();
    expect(methodRefusal("eth_sendTransaction", devnet, undefined)).toBe("methods_deny");
    expect(methodRefusal("eth_chainId", [], ["eth_blockNumber"])).toBe("methods_allow");
  });
});
