import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";

/**
 * The machine under the bench: what it is, how loaded it was, and CPU time by process from
 * /proc (Linux; null elsewhere), so each figure can be read against the noise around it.
 */

export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly node: string;
  readonly platform: string;
}

export function machineInfo(): MachineInfo {
  return {
    cpu: os.cpus()[0]?.model ?? "unknown",
    cores: os.cpus().length,
    memoryGiB: os.totalmem() / 2 ** 30,
    node: process.version,
    platform: `${os.type()} ${os.release()} ${os.arch()}`,
  };
}

/** 1, 5 and 15 minute load averages. */
export const loadAverage = (): readonly number[] => os.loadavg();

export const formatLoad = (load: readonly number[]): string =>
  load.map((value) => value.toFixed(2)).join(" / ");

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  clockTicks ??= Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  return clockTicks;
}

/** The fields of /proc/PID/stat after the command name (field 3 is index 0). */
function statFields(pid: number | "self"): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return null;
  }
}

/** CPU seconds a process has used (user + system). */
export function processCpuSeconds(pid: number): number | null {
  const fields = statFields(pid);
  return fields ? (Number(fields[11]) + Number(fields[12])) / ticksPerSecond() : null;
}

/**
 * CPU seconds of this process's children that have exited and been reaped (the load
 * generator, once it finishes a run).
 */
export function reapedChildrenCpuSeconds(): number | null {
  const fields = statFields("self");
  return fields ? (Number(fields[13]) + Number(fields[14])) / ticksPerSecond() : null;
}

/** The live processes of a process group (Linux; empty elsewhere). */
export function groupMembers(groupId: number): number[] {
  if (process.platform !== "linux") return [];
  const members: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    // Field 5 (index 2) is the process group; field 3 (index 0) the state (Z: a zombie).
    const fields = statFields(Number(entry));
    if (fields && Number(fields[2]) === groupId && fields[0] !== "Z") members.push(Number(entry));
  }
  return members;
}

/** CPU seconds used by every live process of a process group (a server and its helpers). */
export function groupCpuSeconds(groupId: number): number | null {
  if (process.platform !== "linux") return null;
  return groupMembers(groupId).reduce((sum, pid) => sum + (processCpuSeconds(pid) ?? 0), 0);
}

/** CPU seconds the whole machine has been busy (all cores), from /proc/stat. */
export function machineBusySeconds(): number | null {
  try {
    const fields = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "")
      .split(/\s+/)
      .slice(1)
      .map(Number);
    // user nice system idle iowait irq softirq steal: everything but idle and iowait.
    const busy = fields
      .slice(0, 8)
      .reduce((sum, value, index) => (index === 3 || index === 4 ? sum : sum + value), 0);
    return busy / ticksPerSecond();
  } catch {
    return null;
  }
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

/** Spread of repeated measurements: (max − min) / median. */
export function spread(values: readonly number[]): number {
  if (values.length < 2) return 0;
  return (Math.max(...values) - Math.min(...values)) / median(values);
}
