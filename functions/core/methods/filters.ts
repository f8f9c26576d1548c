/**
 * Filters (`eth_newFilter` and its kin) live on the one provider that installed them: the
 * calls about them keep one provider order, and a "not found" from another provider is no
 * answer while the one holding the filter may still be asked.
 */

/** Calls about a filter installed earlier, named by its id. */
export const FILTER_BY_ID: ReadonlySet<string> = new Set([
  "eth_getFilterChanges",
  "eth_getFilterLogs",
  "eth_uninstallFilter",
]);

/** Every call that installs a filter or names one. */
export const FILTER_METHODS: ReadonlySet<string> = new Set([
  "eth_newFilter",
  "eth_newBlockFilter",
  "eth_newPendingTransactionFilter",
  ...FILTER_BY_ID,
]);
