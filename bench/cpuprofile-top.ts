/**
 * Summarises a V8 .cpuprofile: self time by function and by file/package, and optionally
 * inclusive time, callers and owners (see bench/cpuprofile.ts).
 *
 *   npx tsx bench/cpuprofile-top.ts FILE.cpuprofile [--top 40] [--inclusive REGEX]
 *     [--callers REGEX] [--owners [--requests N]] [--skip-seconds S]
 *
 * --callers: for samples whose own frame matches, the nearest project frames (functions/,
 * local/, bench/) on the stack, so native time (writes, crypto) is charged to its caller.
 * --owners: every sample charged to its nearest project frame (file and function), else to
 * the package or native function it ran in; with --requests N, also in µs per request.
 * --skip-seconds: ignore the first S seconds (start-up, module loading).
 */
import { parseArgs } from "node:util";
import {
  byFile,
  byFunction,
  byNearestProjectFrame,
  callersOf,
  inclusiveOf,
  readProfile,
  sample,
  top,
} from "./cpuprofile.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: "string", default: "40" },
    inclusive: { type: "string" },
    callers: { type: "string" },
    owners: { type: "boolean", default: false },
    requests: { type: "string" },
    "skip-seconds": { type: "string", default: "0" },
  },
});
const file = positionals[0];
if (!file)
  throw new Error("usage: cpuprofile-top.ts FILE.cpuprofile [--top N] [--inclusive REGEX]");
const count = Number(values.top);
const sampled = sample(readProfile(file), { fromMs: Number(values["skip-seconds"]) * 1000 });

function table(title: string, totals: Map<string, number>): void {
  console.log(`\n${title} (total ${(sampled.totalUs / 1000).toFixed(0)} ms sampled)`);
  for (const [name, time] of top(totals, count)) {
    console.log(`${((100 * time) / sampled.totalUs).toFixed(1).padStart(6)}%  ${name}`);
  }
}

table("self time by function", byFunction(sampled));
table("self time by file / package", byFile(sampled));
if (values.inclusive) {
  table(
    `inclusive time of /${values.inclusive}/`,
    inclusiveOf(sampled, new RegExp(values.inclusive)),
  );
}
if (values.callers) {
  table(`callers of /${values.callers}/`, callersOf(sampled, new RegExp(values.callers)));
}
if (values.owners) {
  const owners = byNearestProjectFrame(sampled);
  table("time by nearest project frame", owners);
  const requests = Number(values.requests);
  if (requests > 0) {
    console.log(`\nper request (${requests} requests):`);
    for (const [name, time] of top(owners, count)) {
      console.log(`${(time / requests).toFixed(1).padStart(8)} µs  ${name}`);
    }
  }
}
