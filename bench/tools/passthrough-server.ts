import { startPassthrough } from "./passthrough.ts";

/**
 * The pass-through baseline as its own process: `node bench/tools/passthrough-server.ts UPSTREAM`
 * prints "listening URL" and serves until SIGTERM.
 */
const upstream = process.argv[2];
if (!upstream) {
  console.error("usage: node bench/tools/passthrough-server.ts UPSTREAM_URL");
  process.exit(2);
}
const server = await startPassthrough(upstream);
console.log(`listening ${server.url}`);
process.once("SIGTERM", () => {
  void server.close().finally(() => process.exit(0));
});
