/**
 * Which chain a provider is on: each quorum check asks every provider for its block at the
 * height the monitor recorded as `finalized`, and compares the hashes. A provider with another
 * hash there is on another fork (a node stuck on a minority fork, a reset devnet, an archive
 * of another chain with the same chain id): its heads look fine by number and timestamp, but
 * its answers about finalized blocks would be cached as immutable.
 *
 * One answer alone decides nothing: the recorded hash is trusted only while it has the most
 * providers behind it (ties go to the record, which the quorum chose before), and at least one
 * provider agrees with it. When a larger group has another hash, the quorum's chain may have
 * moved (a finality break): nobody is newly excluded, and the finality-break rule decides.
 */

export interface FinalizedAnswer {
  readonly provider: string;
  /** The provider's hash of the block at the recorded finalized height. */
  readonly hash: string;
}

export interface ForkTally {
  /** true = on another fork; false = on the recorded one. Absent: no verdict this tick. */
  readonly verdicts: ReadonlyMap<string, boolean>;
  /**
   * The providers in the largest group of one hash (the record's group on a tie), or empty
   * when nobody answered: where the chain's finalized block is most likely to be read right.
   */
  readonly largestGroup: readonly string[];
}

export function tallyForks(recordedHash: string, answers: readonly FinalizedAnswer[]): ForkTally {
  const groups = new Map<string, string[]>();
  for (const answer of answers) {
    // Hashes are hex: letter case does not make another block.
    const hash = answer.hash.toLowerCase();
    groups.set(hash, [...(groups.get(hash) ?? []), answer.provider]);
  }
  const recorded = recordedHash.toLowerCase();
  const onRecord = groups.get(recorded) ?? [];
  let largest = onRecord;
  for (const [hash, providers] of groups) {
    if (hash !== recorded && providers.length > largest.length) largest = providers;
  }
  const confirmed = onRecord.length > 0 && largest === onRecord;
  const verdicts = new Map<string, boolean>();
  for (const answer of answers) {
    const sameAsRecord = answer.hash.toLowerCase() === recorded;
    // Seeing the recorded hash always clears; another hash counts only against a confirmed record.
    if (sameAsRecord) verdicts.set(answer.provider, false);
    else if (confirmed) verdicts.set(answer.provider, true);
  }
  return { verdicts, largestGroup: largest };
}
