import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type OwnedChildProcess, spawnOwned, stopChild } from "../../local/child-process.ts";
import type { JournalEntry, JournalLog } from "./squid-processor.ts";

/**
 * A subsquid squid (`squid-processor.ts`) kept running as its deployment keeps it: started,
 * restarted a second after it crashes (it resumes from its journal), stopped at the end. What
 * it committed is read back from the journal: the logs it holds now, rollbacks undone.
 */

const PROGRAM = fileURLToPath(new URL("./squid-processor.ts", import.meta.url));
const RESTART_AFTER_MS = 1000;

export interface SquidRun {
  /** The last stderr lines of each crash, in order. */
  readonly crashes: readonly string[];
  /** The highest block the squid has committed. */
  committedHead(): Promise<number>;
  /** The logs the squid holds once it is stopped, and the deliveries of a log it already held. */
  stop(): Promise<{ readonly logs: JournalLog[]; readonly duplicates: number }>;
}

export async function startSquid(options: {
  readonly url: string;
  readonly contract: string;
  readonly fromBlock: number;
}): Promise<SquidRun> {
  const dir = await mkdtemp(join(tmpdir(), "squid-journal-"));
  const journal = join(dir, "journal.jsonl");
  const crashes: string[] = [];
  let stopped = false;
  let current: OwnedChildProcess;
  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  const launch = () => {
    current = spawnOwned(process.execPath, [
      PROGRAM,
      options.url,
      options.contract,
      String(options.fromBlock),
      journal,
    ]);
    const owned = current;
    owned.child.once("exit", (code, signal) => {
      if (stopped) return;
      crashes.push(`exit ${code ?? signal}: ${lastLines(owned.stderrTail())}`);
      restartTimer = setTimeout(launch, RESTART_AFTER_MS);
    });
  };
  launch();
  const entries = async (): Promise<JournalEntry[]> => {
    const text = await readFile(journal, "utf8").catch(() => "");
    return text
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as JournalEntry);
  };
  return {
    crashes,
    async committedHead() {
      const last = (await entries()).at(-1);
      if (last === undefined) return -1;
      return last.kind === "final"
        ? last.next.height
        : (last.blocks.at(-1)?.height ?? last.base.height);
    },
    async stop() {
      stopped = true;
      clearTimeout(restartTimer);
      await stopChild(current.child);
      const held = replay(await entries());
      await rm(dir, { recursive: true, force: true });
      return held;
    },
  };
}

/**
 * The logs the squid's database holds after its transactions, in block order: a transaction
 * first undoes the blocks above its base (a hot one's rollback; a final one's previous head,
 * above which the store drops its hot blocks), then adds its blocks; a log stored twice in
 * one block counts as a duplicate.
 */
export function replay(entries: readonly JournalEntry[]): {
  readonly logs: JournalLog[];
  readonly duplicates: number;
} {
  const held = new Map<number, JournalLog[]>();
  let duplicates = 0;
  const deliver = (heights: readonly number[], logs: readonly JournalLog[]) => {
    for (const height of heights) {
      const block = logs.filter((log) => log.blockNumber === height);
      duplicates += block.length - new Set(block.map((log) => log.logIndex)).size;
      held.set(height, block);
    }
  };
  for (const entry of entries) {
    const base = entry.kind === "final" ? entry.prev.height : entry.base.height;
    for (const height of held.keys()) if (height > base) held.delete(height);
    if (entry.kind === "final") {
      const heights: number[] = [];
      for (let height = base + 1; height <= entry.next.height; height++) heights.push(height);
      deliver(heights, entry.logs);
    } else {
      deliver(
        entry.blocks.map((block) => block.height),
        entry.logs,
      );
    }
  }
  const logs = [...held.entries()].sort(([a], [b]) => a - b).flatMap(([, block]) => block);
  return { logs, duplicates };
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-3).join(" | ").slice(0, 600);
}
