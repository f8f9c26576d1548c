import { readFileSync } from "node:fs";

/**
 * Reading V8 .cpuprofile files (`node --cpu-prof`): self time per sampled frame within a time
 * window, and who to charge it to, by file or package and by the nearest project frame on the
 * stack (so time spent in a library or in native code is charged to the project code that
 * called it).
 */

export interface ProfileNode {
  readonly id: number;
  readonly callFrame: { functionName: string; url: string; lineNumber: number };
  readonly children?: number[];
}

export interface CpuProfile {
  readonly startTime: number;
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

export interface SampledProfile {
  readonly byId: ReadonlyMap<number, ProfileNode>;
  readonly parent: ReadonlyMap<number, number>;
  /** µs of samples whose leaf is the node, within the window. */
  readonly selfTime: ReadonlyMap<number, number>;
  /** µs sampled within the window, idle included. */
  readonly totalUs: number;
}

export const readProfile = (file: string): CpuProfile =>
  JSON.parse(readFileSync(file, "utf8")) as CpuProfile;

/** Samples from `fromMs` to `toMs` after the profile started (default: all of it). */
export function sample(
  profile: CpuProfile,
  window: { fromMs?: number; toMs?: number } = {},
): SampledProfile {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const fromUs = (window.fromMs ?? 0) * 1000;
  const toUs = (window.toMs ?? Number.POSITIVE_INFINITY) * 1000;
  const selfTime = new Map<number, number>();
  let totalUs = 0;
  let elapsedUs = 0;
  profile.samples.forEach((id, index) => {
    const delta = profile.timeDeltas[index] ?? 0;
    elapsedUs += delta;
    if (elapsedUs < fromUs || elapsedUs > toUs) return;
    selfTime.set(id, (selfTime.get(id) ?? 0) + delta);
    totalUs += delta;
  });
  return { byId, parent, selfTime, totalUs };
}

/** The project file (functions/…, local/…, bench/…), the npm package, or "(native)". */
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

const isProject = (node: ProfileNode) => /^(functions|local|bench)\//.test(where(node));

/** Self time by file or package (µs). */
export function byFile(sampled: SampledProfile): Map<string, number> {
  const totals = new Map<string, number>();
  for (const [id, time] of sampled.selfTime) {
    const node = sampled.byId.get(id);
    if (node) totals.set(where(node), (totals.get(where(node)) ?? 0) + time);
  }
  return totals;
}

/** Every sample charged to its nearest project frame, else to its package or native function. */
export function byNearestProjectFrame(sampled: SampledProfile): Map<string, number> {
  const owners = new Map<string, number>();
  for (const [id, time] of sampled.selfTime) {
    const leaf = sampled.byId.get(id);
    if (!leaf) continue;
    let owner: string | undefined;
    for (
      let current: number | undefined = id;
      current !== undefined;
      current = sampled.parent.get(current)
    ) {
      const node = sampled.byId.get(current);
      if (!node) break;
      if (isProject(node)) {
        owner = `${where(node)} ${node.callFrame.functionName || "(anonymous)"}`;
        break;
      }
    }
    const name =
      owner ??
      `(no project frame) ${where(leaf)}${where(leaf) === "(native)" ? ` ${leaf.callFrame.functionName}` : ""}`;
    owners.set(name, (owners.get(name) ?? 0) + time);
  }
  return owners;
}

/** The largest entries, excluding the idle and GC pseudo-frames' bookkeeping names. */
export function top(totals: ReadonlyMap<string, number>, count: number): Array<[string, number]> {
  return [...totals].sort((a, b) => b[1] - a[1]).slice(0, count);
}
