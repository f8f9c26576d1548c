/**
 * The phrases that name a kind of upstream failure: those the JSON-RPC error rules read
 * (`classify-error.ts`), some shared with the hints read from bodies that are not JSON-RPC
 * answers (`classify.ts`). All are word-based and
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
    // reth: "state at block #N is not available, block has not been executed yet".
    /\bhas not been executed yet\b/,
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

// On a trace of a block already mined (a catalogue fact), a pre-check failure means the node
// holds the wrong state for that block (docs/behaviour.md §4.4), so another node may succeed.
export const PRE_CHECK_FAILURE =
  /insufficient funds for gas \* price \+ value|\bnonce too (low|high)\b|\bintrinsic gas too low\b/i;

/** The caller asked for something that fails everywhere: a revert, a range too wide, a bad tx. */
export const CALLERS_FAULT = new RegExp(
  [
    /\breverted\b|\bout of gas\b|\binvalid opcode\b|\bstack (underflow|overflow)\b/,
    LOGS_RANGE_TOO_WIDE,
    LOGS_TOO_MANY,
    LOGS_TOO_LARGE,
    /\binsufficient funds\b|\bnonce too (low|high)\b|\bintrinsic gas too low\b|\btransaction underpriced\b/,
    /\bmax fee per gas less than block base fee\b|\bgas required exceeds allowance\b|\bexceeds block gas limit\b/,
    /\bintrinsic gas too high\b/,
    ALREADY_KNOWN,
  ]
    .map((part) => part.source)
    .join("|"),
  "i",
);

/**
 * geth's words for raw transaction bytes every node refuses alike: bytes that are no
 * transaction, a bad signature, a fee field out of order, too much data. The sender's; about
 * another method (an "rlp:" error reading the node's own database) they would be the node's.
 */
export const RAW_TRANSACTION_REFUSED =
  /\brlp: |\btyped transaction too short\b|\btransaction type not supported\b|\binvalid sender\b|\bmax priority fee per gas higher than max fee per gas\b|\boversized data\b/i;

/** Errors from the permanent table that no later rule may turn into a retry. */
export const PERMANENT_UNCLASSIFIED =
  /\bnot currently canonical\b|\bauthenticated api key required\b|\bdoes not support chain ?id|\bunauthori[sz]ed\b/i;

export const METHOD_UNSUPPORTED =
  /\bmethod\b[^.]{0,60}\b(not found|does not exist|not available|not supported|unsupported|not enabled|not allowed|disabled|not whitelisted)\b|\b(unsupported|unknown) method\b|\bmethod ignored\b|\bnot available on (this|your|the)?\s*(free |current )?(plan|tier)\b/i;

// Named by the sources: a lagging backend, a proxy whose upstreams failed, a dropped connection.
export const TRANSIENT_PHRASES = new RegExp(
  [
    /upstream connect error|disconnect\/reset before headers|cannot parse json-rpc response/,
    /\bno available upstreams?\b|errors from the following providers prevented the request/,
    /\bfailsafe timeout policy exceeded\b|\bcontext (canceled|cancelled|deadline exceeded)\b/,
    LAGGING_BACKEND,
    /\bconnection (refused|reset)\b|\bdial tcp\b|\bbroken pipe\b/,
  ]
    .map((part) => part.source)
    .join("|"),
  "i",
);

export const TIMEOUT = /\bexecution timeout\b|\btimed out\b|\bi\/o timeout\b/i;

/** Blames the request in words (codes -32700/-32600/-32602 do so by definition). */
export const INVALID_REQUEST =
  /\binvalid (params|parameters?|arguments?|input|request)\b|\bcannot unmarshal\b|\bmissing value\b/i;

/**
 * Words that promise a retry may work. Weaker than the phrases above: they count only when
 * neither the code nor the message has already blamed the request, and the bare word
 * "retry" is not one of them.
 */
export const SOFT_TRANSIENT =
  /\btemporar(y|ily)\b|\bplease (retry|try again)\b|\btry again later\b|\bat this time\b|\b(under (too much|heavy) load|overloaded)\b/i;
