import type { AttemptSlot } from "../../../routing/selection.ts";
import { quantity } from "../logs-range.ts";
import type { LogFilter } from "./logs-bloom.ts";
import { logMatches } from "./logs-bloom.ts";
import type { AnswerCheck, AnswerVerdict } from "./logs-check.ts";
import type { BlockHeader } from "./logs-headers.ts";

/**
 * The tie-break of a bloom hit (docs/behaviour.md §12.12): a block the answer has no log of,
 * whose bloom says the filter may be there, is settled by the block's own receipts, filtered
 * by the query's address and topics.
 */

export /**
 * Each bloom hit, newest first, within `logs_check_receipts`: the block's receipts (from the
 * next provider of the call's order, else the answer's own: a provider whose receipts leave
 * out what its logs leave out would otherwise clear itself), filtered by the query, show
 * whether the block has a matching log (the provider is missing data) or the bloom lied
 * (remembered, so no query asks again). A hit no receipts settle leaves the answer in use: a
 * bloom that lies must never make every provider fail.
 */
async function tieBreak(
  hits: readonly BlockHeader[],
  filter: LogFilter,
  check: AnswerCheck,
): Promise<AnswerVerdict> {
  const network = check.scope.network.name;
  const provider = check.slot.provider.name;
  const filterKey = JSON.stringify(filter);
  let budget = check.scope.network.settings.logs_check_receipts;
  for (const header of hits) {
    if (check.checks.isFalsePositive(header, filterKey)) {
      check.checks.count(network, provider, "bloom_false_positives");
      continue;
    }
    let outcome: "present" | "absent" | "unknown" = "unknown";
    for (const slot of [check.other, check.slot]) {
      if (slot === null || budget <= 0 || outcome !== "unknown") continue;
      budget--;
      outcome = await receiptsSay(header, filter, slot, check);
    }
    if (outcome === "present") {
      return {
        kind: "missing",
        reason: "missing_data",
        block: header.number,
        detail: `its answer has no log of block ${quantity(header.number)}, whose logsBloom and receipts hold the filter's logs: it is missing data`,
      };
    }
    if (outcome === "absent") {
      check.checks.rememberFalsePositive(header, filterKey);
      check.checks.count(network, provider, "bloom_false_positives");
    } else {
      check.checks.count(network, provider, "bloom_unresolved");
    }
  }
  return { kind: "use", shown: null };
}

/** Whether the block's receipts hold a log the filter matches, as `slot` tells them. */
async function receiptsSay(
  header: BlockHeader,
  filter: LogFilter,
  slot: AttemptSlot,
  check: AnswerCheck,
): Promise<"present" | "absent" | "unknown"> {
  check.checks.count(check.scope.network.name, check.slot.provider.name, "receipts_asked");
  const called = await check.call(
    slot,
    `{"jsonrpc":"2.0","id":1,"method":"eth_getBlockReceipts","params":["${header.hash}"]}`,
  );
  if (called.kind !== "answer") return "unknown";
  const receipts = (called.member as { result?: unknown } | null)?.result;
  if (!Array.isArray(receipts)) return "unknown";
  let present = false;
  for (const receipt of receipts) {
    const { blockHash, logs } = (receipt ?? {}) as { blockHash?: unknown; logs?: unknown };
    // Receipts of another block are no tie-break.
    if (typeof blockHash !== "string" || blockHash.toLowerCase() !== header.hash) return "unknown";
    if (Array.isArray(logs) && logs.some((log) => logMatches(log, filter))) present = true;
  }
  return present ? "present" : "absent";
}
