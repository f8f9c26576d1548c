/**
 * Summarises a V8 .cpuprofile: self time by function and by file/package, and inclusive time
 * of the functions whose name matches an optional filter.
 *
 *   npx tsx bench/cpuprofile-top.ts FILE.cpuprofile [--top 40] [--inclusive REGEX]
 *     [--callers REGEX] [--skip-seconds S]
 *
 * --callers: for samples whose own frame matches, the nearest project frames (functions/,
 * local/, bench/) on the stack, so native time (writes, crypto) is charged to its caller.
 * --owners: every sample charged to its nearest project frame (file and function), else to
 * the package or native function it ran in; with --requests N, also in µs per request.
 * --skip-seconds: ignore the first S seconds (start-up, module loading).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

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
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const top = Number(values.top);

const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes)
  for (const child of node.children ?? []) parent.set(child, node.id);

const selfTime = new Map<number, number>();
let total = 0;
const skipUs = Number(values["skip-seconds"]) * 1e6;
let elapsedUs = 0;
profile.samples.forEach((id, index) => {
  const delta = profile.timeDeltas[index] ?? 0;
  elapsedUs += delta;
  if (elapsedUs < skipUs) return;
  selfTime.set(id, (selfTime.get(id) ?? 0) + delta);
  total += delta;
});

function where(node: ProfileNode): string {
  const url = node.callFrame.url.replace(/^file:\/\//, "");
  const modules = url.lastIndexOf("node_modules/");
  if (modules !== -1) {
    const rest = url.slice(modules + "node_modules/".length).split("/");
    return rest[0]?.startsWith("@") ? `${rest[0]}/${rest[1]}` : (rest[0] ?? url);
  }
  const project = /\/((?:functions|local|bench|test|scripts)\/.*)$/.exec(url);
  if (project?.[1]) return project[1];
  return url === "" ? "(native)" : url;
}

const label = (node: ProfileNode) =>
  `${node.callFrame.functionName || "(anonymous)"}  ${where(node)}:${node.callFrame.lineNumber + 1}`;

function table(title: string, totals: Map<string, number>): void {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)`);
  const sorted = [...totals].sort((a, b) => b[1] - a[1]).slice(0, top);
  for (const [name, time] of sorted) {
    console.log(`${((100 * time) / total).toFixed(1).padStart(6)}%  ${name}`);
  }
}

const byFunction = new Map<string, number>();
const byFile = new Map<string, number>();
for (const [id, time] of selfTime) {
  const node = byId.get(id);
  if (!node) continue;
  byFunction.set(label(node), (byFunction.get(label(node)) ?? 0) + time);
  byFile.set(where(node), (byFile.get(where(node)) ?? 0) + time);
}
table("self time by function", byFunction);
table("self time by file / package", byFile);

if (values.inclusive) {
  // Inclusive time: a sample counts once for each distinct matching frame on its stack.
  const pattern = new RegExp(values.inclusive);
  const inclusive = new Map<string, number>();
  for (const [id, time] of selfTime) {
    const seen = new Set<string>();
    for (
      let current: number | undefined = id;
      current !== undefined;
      current = parent.get(current)
    ) {
      const node = byId.get(current);
      if (!node) break;
      const name = label(node);
      if (pattern.test(name) && !seen.has(name)) {
        seen.add(name);
        inclusive.set(name, (inclusive.get(name) ?? 0) + time);
      }
    }
  }
  table(`inclusive time of /${values.inclusive}/`, inclusive);
}

if (values.callers) {
  const pattern = new RegExp(values.callers);
  const callers = new Map<string, number>();
  for (const [id, time] of selfTime) {
    const leaf = byId.get(id);
    if (!leaf || !pattern.test(label(leaf))) continue;
    const path: string[] = [];
    for (let current = parent.get(id); current !== undefined && path.length < 3; ) {
      const node = byId.get(current);
      if (!node) break;
      if (/^(functions|local|bench)\//.test(where(node))) path.push(label(node));
      current = parent.get(current);
    }
    const name = `${label(leaf)}  <=  ${path.join("  <=  ") || "(no project frame)"}`;
    callers.set(name, (callers.get(name) ?? 0) + time);
  }
  table(`callers of /${values.callers}/`, callers);
}

if (values.owners) {
  const owners = new Map<string, number>();
  for (const [id, time] of selfTime) {
    const leaf = byId.get(id);
    if (!leaf) continue;
    let owner: string | undefined;
    for (
      let current: number | undefined = id;
      current !== undefined;
      current = parent.get(current)
    ) {
      const node = byId.get(current);
      if (!node) break;
      if (/^(functions|local|bench)\//.test(where(node))) {
        owner = `${where(node)} ${node.callFrame.functionName || "(anonymous)"}`;
        break;
      }
    }
    const name =
      owner ??
      `(no project frame) ${where(leaf)}${where(leaf) === "(native)" ? ` ${leaf.callFrame.functionName}` : ""}`;
    owners.set(name, (owners.get(name) ?? 0) + time);
  }
  table("time by nearest project frame", owners);
  const requests = Number(values.requests);
  if (requests > 0) {
    console.log(`\nper request (${requests} requests):`);
    const sorted = [...owners].sort((a, b) => b[1] - a[1]).slice(0, top);
    for (const [name, time] of sorted) {
      console.log(`${(time / requests).toFixed(1).padStart(8)} µs  ${name}`);
    }
  }
}
