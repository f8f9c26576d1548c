// dynalite ships no types; this covers the one factory the local runtime uses.
declare module "dynalite" {
  import type { Server } from "node:http";

  interface DynaliteOptions {
    /** How long a new table stays CREATING (default 500 ms; 0 makes it usable at once). */
    createTableMs?: number;
    deleteTableMs?: number;
    updateTableMs?: number;
    maxItemSizeKb?: number;
    /** LevelDB directory; in memory when absent. */
    path?: string;
    verbose?: boolean;
    debug?: boolean;
  }

  function dynalite(options?: DynaliteOptions): Server;
  export = dynalite;
}
