import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, normalize } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The pointers the docs and the code's comments give (CONTRIBUTING.md "One fact, one page"):
 * a repository path, a `docs/behaviour.md §N.M` section, a Markdown link and its anchor. A
 * move of files (the restructure of #26 moved most tests) must take its pointers with it.
 */
const ROOT = join(import.meta.dirname, "..", "..", "..");

/** Every file git tracks, relative to the root: what may be pointed at, and where pointers are. */
const tracked = execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8" })
  .split("\n")
  .filter((path) => path !== "" && existsSync(join(ROOT, path)));

/** Where pointers are: the docs and the code, but not this file, which names broken ones. */
const pointing = tracked.filter(
  (path) =>
    path !== "test/unit/docs/docs-pointers.test.ts" &&
    (/^(functions|test|local|scripts|infra|bench)\/.*\.ts$/.test(path) ||
      /^(docs\/[^/]+|README|CONTRIBUTING|test\/chaos\/CHAOS)\.md$/.test(path)),
);

/** Paths written as examples of a shape, not of a file. */
const EXAMPLES = new Set(["test/path/to/file.test.ts", "test/unit/some-behaviour.test.ts"]);

/**
 * A repository path: at a word's start (not inside another repository's path, nor after a
 * commit's `rev:` as `git show` takes it), under a top-level folder of this repository.
 */
const PATH =
  /(?<![\w./:-])((?:functions|test|local|scripts|infra|bench|docs)\/[\w./-]+\.(?:ts|md|json))/g;

function pathsNamed(text: string): string[] {
  return [...text.matchAll(PATH)].map((match) => match[1] as string);
}

function behaviourSections(): Map<number, Set<number>> {
  const sections = new Map<number, Set<number>>();
  let section: Set<number> | undefined;
  for (const line of readFileSync(join(ROOT, "docs/behaviour.md"), "utf8").split("\n")) {
    const heading = /^## (\d+)\./.exec(line);
    if (heading) {
      section = new Set();
      sections.set(Number(heading[1]), section);
      continue;
    }
    const item = /^(\d+)\. /.exec(line);
    if (item && section) section.add(Number(item[1]));
  }
  return sections;
}

/** The anchors GitHub gives a Markdown file's headings. */
function anchorsOf(path: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(join(ROOT, path), "utf8").split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const text = (heading[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, "$1");
    const slug = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return anchors;
}

describe("docs and comments point at what exists", () => {
  it("regression: behaviour.md §10 named test/e2e/quorum-capture.test.ts and test/e2e/chain-restart.test.ts after the restructure moved them, and the follower's row cited §15.18, which does not exist; now every path and section cited resolves", () => {
    const files = new Set(tracked);
    const sections = behaviourSections();
    const broken: string[] = [];
    for (const path of pointing) {
      const text = readFileSync(join(ROOT, path), "utf8");
      for (const named of pathsNamed(text)) {
        if (!files.has(named) && !EXAMPLES.has(named)) broken.push(`${path}: ${named}`);
      }
      for (const cited of text.matchAll(/§\s?(\d+)(?:\.(\d+))?/g)) {
        const items = sections.get(Number(cited[1]));
        if (items === undefined || (cited[2] !== undefined && !items.has(Number(cited[2])))) {
          broken.push(`${path}: ${cited[0]}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("every relative Markdown link names a file that exists, and an anchor its headings give", () => {
    const broken: string[] = [];
    for (const path of pointing.filter((file) => file.endsWith(".md"))) {
      const text = readFileSync(join(ROOT, path), "utf8");
      for (const link of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = link[1] as string;
        if (/^(https?|mailto):/.test(target)) continue;
        const [file = "", anchor] = target.split("#");
        const linked = file === "" ? path : normalize(join(dirname(path), file));
        if (!existsSync(join(ROOT, linked))) broken.push(`${path}: ${target}`);
        else if (anchor !== undefined && linked.endsWith(".md") && !anchorsOf(linked).has(anchor)) {
          broken.push(`${path}: ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
