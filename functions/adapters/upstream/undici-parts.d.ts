// undici's dispatcher and socket connector, imported by path so a bundle leaves out the rest
// of the package (its index loads fetch, WebSocket, the cache and the mocks). The package's
// own types describe them.
declare module "undici/lib/dispatcher/agent.js" {
  import type { Agent } from "undici";

  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module "undici/lib/core/connect.js" {
  import type { buildConnector } from "undici";

  const build: typeof buildConnector;
  export default build;
}

declare module "undici/lib/core/symbols.js" {
  const symbols: {
    /**
     * A dispatch option: a dispatcher that queues the request (no connection free yet) calls it
     * with a function that takes the request out of its queue. undici's own `request()` sets it
     * for a request with an AbortSignal.
     */
    readonly kQueuedAbort: unique symbol;
  };
  export default symbols;
}
