import { isRecord } from "../../jsonrpc/envelope.ts";
import { parseJsonOrUndefined } from "../../jsonrpc/json-raw.ts";
import { logsOfAnswer, matches, type PlacedLog } from "../../request/filters/filter-answers.ts";
import type { LogCriteria } from "../../request/filters/filter-criteria.ts";
import type { LogsFilter } from "../../subscriptions/subscription-records.ts";

/**
 * The logs of one block, for every `logs` subscription of a network at once
 * (docs/behaviour.md "Subscriptions over WebSocket"): one eth_getLogs by the block's hash
 * whose filter covers every subscription's (the union of their addresses, no topics: a
 * superset), then each subscription's own matches, by geth's rule, from that one answer.
 */

/** A log of the block, parsed once for every subscription's match. */
export interface BlockLog extends PlacedLog {
  readonly fields: Readonly<Record<string, unknown>>;
}

/**
 * The most addresses one query names; beyond it the query asks for every log of the block
 * (providers refuse long address lists, and the answer is one block's logs either way).
 */
export const MAX_QUERY_ADDRESSES = 256;

/**
 * The eth_getLogs params that cover every filter: the block's hash and, when every filter
 * names addresses (at most `MAX_QUERY_ADDRESSES` together), their union; else any address.
 */
export function blockLogsParams(hash: string, filters: readonly LogsFilter[]): unknown[] {
  const addresses = new Set<string>();
  for (const filter of filters) {
    const named = filter.address ?? [];
    if (named.length === 0) return [{ blockHash: hash }];
    for (const address of named) addresses.add(address.toLowerCase());
  }
  if (addresses.size > MAX_QUERY_ADDRESSES) return [{ blockHash: hash }];
  return [{ blockHash: hash, address: [...addresses].sort() }];
}

/** A filter as the matching rule takes it. */
export function criteriaOf(filter: LogsFilter | null): LogCriteria {
  return { address: filter?.address ?? null, topics: filter?.topics ?? null };
}

/**
 * The block's logs from an eth_getLogs answer, in log order, each once; null when the answer
 * is not a list of logs, or holds a log of another block (a stale backend, another fork): a
 * subscriber is never sent a log of a block it was not sent.
 */
export function blockLogsOf(answer: string, hash: string): BlockLog[] | null {
  const placed = logsOfAnswer(answer, null, { address: null, topics: null });
  if (placed === null) return null;
  const logs: BlockLog[] = [];
  for (const log of placed) {
    if (log.blockHash.toLowerCase() !== hash.toLowerCase()) return null;
    const fields = parseJsonOrUndefined(log.text);
    if (!isRecord(fields)) return null;
    logs.push({ ...log, fields });
  }
  return logs;
}

/** The logs of the block one filter selects. */
export function logsFor(logs: readonly BlockLog[], filter: LogsFilter | null): BlockLog[] {
  const criteria = criteriaOf(filter);
  return logs.filter((log) => matches(log.fields, criteria));
}
