import type { LedgerEntry, TransactionLedger } from "../../functions/core/ports.ts";

/**
 * The transaction ledger in memory, for the pipeline's unit tests; held to the same contract
 * as the DynamoDB ledger (test/integration/adapters/store/transaction-ledger.test.ts).
 */
export class MemoryTransactionLedger implements TransactionLedger {
  readonly entries = new Map<string, LedgerEntry>();

  async claim(network: string, hash: string, at: number): Promise<LedgerEntry | null> {
    const existing = this.entries.get(`${network}/${hash}`);
    if (existing) return existing;
    this.entries.set(`${network}/${hash}`, { status: "sending", at });
    return null;
  }

  async settle(network: string, hash: string, outcome: LedgerEntry): Promise<void> {
    if (this.entries.get(`${network}/${hash}`)?.status === "accepted") return;
    this.entries.set(`${network}/${hash}`, outcome);
  }
}
