/**
 * What the proxy bundle holds beyond the cold-start baseline's, built as the stack builds
 * both (bench/bundles.ts): KB of minified output per npm package and per project directory,
 * largest difference first.
 *
 *   npx tsx bench/bundle-contents.ts [--depth 2] [--min-kb 1]
 */
import { parseArgs } from "node:util";
import { BASELINE_ENTRY, buildBundle, bytesByOrigin, GATEWAY_ENTRY } from "./bundles.ts";

const { values } = parseArgs({
  options: { depth: { type: "string", default: "2" }, "min-kb": { type: "string", default: "1" } },
});
const depth = Number(values.depth);
const minBytes = Number(values["min-kb"]) * 1024;

const [gateway, baseline] = await Promise.all([
  buildBundle({ name: "contents-gateway", entry: GATEWAY_ENTRY, client: "undici" }),
  buildBundle({ name: "contents-baseline", entry: BASELINE_ENTRY, client: "undici" }),
]);
const ours = bytesByOrigin(gateway.metafile, depth);
const theirs = bytesByOrigin(baseline.metafile, depth);
const kb = (bytes: number) => (bytes / 1024).toFixed(1).padStart(8);

console.log(`proxy ${kb(gateway.bytes)} KB, baseline ${kb(baseline.bytes)} KB`);
console.log(
  `${"gateway KB".padStart(11)} ${"baseline KB".padStart(11)} ${"extra KB".padStart(9)}  origin`,
);
const origins = [...new Set([...ours.keys(), ...theirs.keys()])]
  .map((origin) => ({ origin, ours: ours.get(origin) ?? 0, theirs: theirs.get(origin) ?? 0 }))
  .filter((row) => Math.max(row.ours, row.theirs) >= minBytes)
  .sort((a, b) => b.ours - b.theirs - (a.ours - a.theirs) || b.ours - a.ours);
for (const row of origins) {
  console.log(`${kb(row.ours)}    ${kb(row.theirs)}   ${kb(row.ours - row.theirs)}  ${row.origin}`);
}
