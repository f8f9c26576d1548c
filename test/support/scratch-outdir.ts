import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A cloud assembly directory for one test synth, removed after its test file (the setup file
 * `scratch-cleanup.ts` does it for every file). A CDK App without an `outdir` makes its own
 * temp directory and never removes it: full test runs left gigabytes of them behind on a
 * developer's disk (22 MB for a synth with asset staging). A vitest fork is killed, not exited,
 * so a process exit handler would not run.
 */
const made: string[] = [];

export function removeScratchOutdirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function scratchOutdir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
