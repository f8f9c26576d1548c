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
  "priv_*",
  "eea_*",
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
  // the mempool's content (every pending transaction; txpool_status's counts stay served)
  "txpool_content*",
  "txpool_inspect",
  "txpool_besuTransactions",
  "parity_pendingTransactions",
] as const;
