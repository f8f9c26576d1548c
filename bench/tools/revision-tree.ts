import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, symlinkSync } from "node:fs";
import { join, resolve } from "node:path";

/**
 * Another revision's source tree, for `--against REV`: the commit's files as `git archive`
 * gives them, under bench/.tmp/rev-<commit>/, with this checkout's node_modules linked in, so
 * the two builds of one run differ only in the project's code. Kept between runs.
 */

const ROOT = resolve(import.meta.dirname, "..", "..");

export interface RevisionTree {
  /** The short commit id. */
  readonly commit: string;
  readonly root: string;
}

export function revisionTree(revision: string): RevisionTree {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: ROOT, encoding: "utf8" });
  let commit: string;
  try {
    commit = git("rev-parse", "--short", `${revision}^{commit}`).trim();
  } catch {
    throw new Error(`--against ${revision}: no such commit in this repository`);
  }
  const root = join(ROOT, "bench", ".tmp", `rev-${commit}`);
  if (!existsSync(join(root, "package.json"))) {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    const archive = execFileSync("git", ["archive", commit], { cwd: ROOT, maxBuffer: 1 << 30 });
    execFileSync("tar", ["-x", "-C", root], { input: archive });
    symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"), "dir");
  }
  return { commit, root };
}
