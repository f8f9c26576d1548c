import { registerHooks } from "node:module";

/**
 * `node --import ./bench/use-node-http-upstream.ts …`: every import of the gateway's upstream
 * adapter gets Node's-http adapter (bench/node-http-upstream.ts) instead, so the A/B runs the
 * gateway exactly as `npm start` runs it, with only the HTTP client changed.
 */
const NODE_HTTP_ADAPTER = new URL("./node-http-upstream.ts", import.meta.url).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const resolved = nextResolve(specifier, context);
    if (
      resolved.url.endsWith("/functions/adapters/upstream.ts") &&
      context.parentURL !== NODE_HTTP_ADAPTER
    ) {
      return { ...resolved, url: NODE_HTTP_ADAPTER };
    }
    return resolved;
  },
});
