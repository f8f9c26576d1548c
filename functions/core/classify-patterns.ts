/**
 * The phrases that name a kind of upstream failure, shared by the JSON-RPC error rules and
 * the hints read from bodies that are not JSON-RPC answers. All are word-based and
 * case-insensitive: a status number such as 429 or 403 is never looked for in text, where
 * it could be part of a hash or a block number.
 */

export const RATE_LIMIT =
  /\brate[- ]?limit|\btoo many requests\b|\bthroughput limit\b|\bexceeded\b[^.]{0,60}\bcapacity\b|\bcapacity exceeded\b|\brequest limit (reached|exceeded)\b/i;

export const QUOTA =
  /\bexceeded (the|your) quota\b|\bquota (usage|limit|exceeded)\b|\bquota\b[^.]{0,40}\bexceeded\b|\bdaily request count exceeded\b/i;

/** The provider does not serve this chain (dRPC: "chain is not available on free plan"). */
export const CHAIN_UNAVAILABLE =
  /\b(chain|network)\b[^.:]{0,30}\bnot (available|supported|enabled)\b|\bunsupported (chain|network)\b/i;

/** Text of a bare (non-JSON-RPC) answer that says the credentials or the URL are refused. */
export const FORBIDDEN =
  /\bunauthori[sz]ed\b|\bforbidden\b|\baccess denied\b|\binvalid (api[- ]?key|project id|token)\b|\bapi[- ]?key\b[^.]{0,30}\b(invalid|missing|required|disabled)\b/i;

/**
 * The provider refuses a batch this big (not the request, nor the provider for single calls),
 * or any batch at all: geth's "batch too large", jsonrpsee's (reth) "The batch request was too
 * large" and "Batched requests are not supported", dRPC's "Batch of more than 3 requests".
 */
export const BATCH_LIMIT =
  /\bbatch (limit|size)\b[^.]{0,40}\b(exceed|exceeded|too (large|big)|reached)\b|\bbatch too large\b|\btoo many (requests|calls) in (a |the )?batch\b|\bmax(imum)? batch size\b|\bbatch (request|response) (was |is )?too (large|big)\b|\bbatch(ed)? requests? (are |is )?not (supported|allowed)\b|\bbatch of more than \d+\b/i;

/**
 * A node already holds the transaction being sent (geth "already known", Nethermind
 * "AlreadyKnown", reth/anvil "transaction already imported", Erigon "already exists"): the send
 * succeeded before, wherever it landed.
 */
export const ALREADY_KNOWN =
  /\balready known\b|\balreadyknown\b|\bknown transaction\b|\b(transaction|tx) already (imported|exists|in (the )?(mempool|pool))\b|\balready exists in (the )?(mempool|pool|cache)\b/i;

/** The sender's nonce is past the transaction's: mined already, or a replacement's. */
export const NONCE_TOO_LOW = /\bnonce too low\b/i;

/**
 * A backend that has not reached the block asked about yet: it is behind, not broken, so the
 * call goes to another provider without a strike (docs/behaviour.md §10).
 */
export const LAGGING_BACKEND = new RegExp(
  [
    /could not find results for height|block result not found|finalized block not found|\bblock not found\b/,
    /\bdoes(n't| not) exist yet\b|must be less than or equal to the current blockchain height|\bheader not found\b|\bunknown block\b|\binvalid block height\b/,
    /\bnot (yet )?synced\b|\bis syncing\b|\bupstream height \d+ is less than\b/,
    /\bblock height is \d+ but requested was \d+\b|\bBlockOutOfRangeError\b/,
    // geth's tracers and raw getters about a block number they have not reached.
    /\b(block|header) #\d+ not found\b/,
  ]
    .map((part) => part.source)
    .join("|"),
  "i",
);

/**
 * geth refusing a log query whose `toBlock` is above its head (-32602). The caller's answer
 * when nobody knows that block exists; a provider behind when the gateway does (§10).
 */
export const RANGE_BEYOND_HEAD = /\bblock range extends beyond (the )?current head\b/i;

/**
 * A provider refusing a log query as too big (docs/behaviour.md §12), in three kinds: the
 * answer's size, the number of logs, and the block span. Each is the caller's to narrow, never
 * the provider's failure; the gateway narrows eth_getLogs itself.
 */
export const LOGS_TOO_LARGE =
  /\bresponse size (exceeded|should not)|\bresponse (is )?too (large|big)\b|\b(result|response|answer) is too big\b|\bover the limit of \d+ bytes \(max_response_bytes\)/i;

export const LOGS_TOO_MANY =
  /\breturned more than \d[\d,]* (results|logs)\b|\bexceeds? max(imum)? results\b|\btoo many (results|logs)\b|\bmore than \d[\d,]* logs\b|\blogs? (count|limit) exceeded\b/i;

export const LOGS_RANGE_TOO_WIDE = new RegExp(
  [
    /\b(block )?range\b[^.]{0,30}\btoo (large|wide|big)\b|\bexceeds? (the )?(max(imum)? )?(allowed )?block range\b/,
    /\bmax(imum)? block range\b|\b(block )?range limit\b[^.]{0,20}\bexceeded\b|\bsmaller block range\b/,
    /\b(is|are) limited to an? [\d,]+k? (blocks? )?range\b|\branges? over [\d,]+ blocks\b/,
    /\bblock range (greater|larger|bigger) than\b|\brequested too many blocks\b/,
    /\bup to an? [\d,]+k? block range\b|\bblocks distance\b|\bquery exceeds limit\b/,
  ]
    .map((part) => part.source)
    .join("|"),
  "i",
);
