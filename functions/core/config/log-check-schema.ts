import * as z from "zod/mini";

/** The log-answer checks' keys (docs/behaviour.md §12.12), built with the other schemas. */
export function defineLogCheckSchemas() {
  return {
    /**
     * What a block's logsBloom means for the log checks: "standard" (the Yellow Paper's,
     * checked), "off" (not checked: the chain's blooms mean something else or nothing), "auto"
     * (the known profile of the network's chain id, else "standard").
     */
    logsBloom: z.enum(["auto", "standard", "off"]),
    /** Headers one log query's checks may ask for (each a billed call). */
    logsCheckHeaders: z.int().check(z.gte(0), z.lte(64)),
    /** Receipts one log answer's bloom hits may fetch. */
    logsCheckReceipts: z.int().check(z.gte(0), z.lte(8)),
  };
}
