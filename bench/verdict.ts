import type { MachineInfo } from "./tools/machine.ts";

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
