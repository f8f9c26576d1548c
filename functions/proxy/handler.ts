import { proxyRuntimeFromEnvironment } from "./from-environment.ts";
import { createProxyHandler } from "./lambda.ts";

/** The proxy Lambda: wiring only. Everything at module scope lives as long as the container. */
export const handler = createProxyHandler(proxyRuntimeFromEnvironment(process.env));
