import { methodMatches } from "../jsonrpc/jsonrpc.ts";

/**
 * Methods refused unless a config lists its own `methods_deny` (docs/behaviour.md §8.2): those
 * that sign with a node's keys or change a node's state or configuration, and those that hand
 * out a node's private view (its accounts, its mempool's content). A public gateway in front
 * of a node with an unlocked account would otherwise spend from it for anyone.
 */
export const DEFAULT_METHODS_DENY = [
  // node administration, accounts, mining, the consensus client's API
  "admin_*",
  "personal_*",
  "miner_*",
  "engine_*",
  // signing with the node's keys (anvil's eth_sendTransactionSync too, geth's eth_resend),
  // sending unsigned (anvil), private transactions (Besu), and the keys the node holds
  "eth_sendTransaction*",
  "eth_sendUnsignedTransaction",
  "eth_resend",
  "eth_sign*",
  "eth_accounts",
  // anvil's alias of eth_accounts (EIP-1102's name), and the pool's transactions from them (geth)
  "eth_requestAccounts",
  "eth_pendingTransactions",
  // a wallet's calls, sent and paid for by the node's own key (anvil's Odyssey executor)
  "wallet_*",
  "odyssey_sendTransaction",
  "priv_*",
  "eea_*",
  // a node's own messages and stores: Whisper identities, the legacy db_put*, a PoW miner's work
  "shh_*",
  "db_*",
  "eth_submitWork",
  "eth_submitHashrate",
  // development nodes' controls: balances, code, storage, mining, time, impersonation, snapshots
  "anvil_*",
  "hardhat_*",
  "evm_*",
  "tenderly_*",
  // debug_* calls that change the node (its head, chain, runtime, logging) or write files on it
  "debug_set*",
  "debug_reset*",
  "debug_delete*",
  "debug_insert*",
  "debug_migrate*",
  "debug_resync*",
  "debug_start*",
  "debug_stop*",
  "debug_write*",
  "debug_*Profile",
  "debug_*ToFile",
  "debug_goTrace",
  "debug_backtraceAt",
  "debug_sync",
  "debug_verbosity",
  "debug_vmodule",
  "debug_freeOSMemory",
  "debug_chaindbCompact",
  // a node's consensus and permission settings (Nethermind's signer, Besu's votes and lists)
  "parity_set*",
  "parity_clear*",
  "clique_propose",
  "clique_discard",
  "*_proposeValidatorVote",
  "*_discardValidatorVote",
  "perm_*",
  "plugins_*",
  // geth's light server: its clients' balances and parameters
  "les_*",
  // the mempool's content (every pending transaction; txpool_status's counts stay served)
  "txpool_content*",
  "txpool_inspect",
  "txpool_besuTransactions",
  "txpool_besuPendingTransactions",
  "parity_pendingTransactions",
] as const;

/**
 * The default patterns a configured `methods_deny` no longer refuses: the list replaces the
 * default whole, so one written to refuse one more method serves all of these. A pattern
 * counts as kept when the list names it or holds one matching it (`eth_*` keeps `eth_sign*`).
 */
export function reopenedByDefault(deny: readonly string[]): string[] {
  return DEFAULT_METHODS_DENY.filter((pattern) => !methodMatches(pattern, deny));
}
