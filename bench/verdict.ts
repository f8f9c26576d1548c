import { formatLoad, type MachineInfo } from "./tools/machine.ts";

/** A target's verdict, and what every part of bench/results.json records about its run. */

export interface Verdict {
  readonly target: string;
  readonly measured: string;
  readonly verdict: "PASS" | "FAIL" | "INVALID";
}

export interface PartMeta {
  readonly date: string;
  readonly command: string;
  readonly revision: string;
  readonly machine: MachineInfo;
  readonly loadAtStart: readonly number[];
  readonly loadAtEnd: readonly number[];
}

export function verdict(ok: boolean, valid = true): Verdict["verdict"] {
  if (!valid) return "INVALID";
  return ok ? "PASS" : "FAIL";
}

/** When and on what a part was measured, for its section of bench/RESULTS.md. */
export function measuredWhen(part: PartMeta): string {
  return `${part.date}, load ${formatLoad(part.loadAtStart)} at start, ${formatLoad(part.loadAtEnd)} at end; ${part.revision}; \`${part.command}\``;
}
