/**
 * The layout's house rules, checked (docs/architecture.md "Layout"): no import cycle in
 * `functions/` with type-only imports counted, no folder under `functions/` above 15 source
 * files, no source file above 400 lines. Biome's `noImportCycles` sees the cycles too; this
 * reads the whole graph at once and names every strongly connected component.
 *
 * `npx tsx scripts/layout-check.ts [root]` prints what breaks a rule and exits 1 if any does.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const MAX_FILES_PER_FOLDER = 15;
const MAX_LINES = 400;

const root = resolve(process.argv[2] ?? "functions");

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** Every relative specifier a file imports or re-exports, `import type` and `import()` too. */
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\b[^"';]*?\bfrom\s*["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm;

function importsOf(file: string, text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(SPECIFIER)) {
    const spec = match[1] ?? match[2] ?? match[3];
    if (spec === undefined || !spec.startsWith(".")) continue;
    out.push(resolve(dirname(file), spec));
  }
  return out;
}

/** Tarjan's strongly connected components of more than one file (or a file importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    indices.set(node, index);
    low.set(node, index);
    index++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!indices.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) ?? 0, low.get(next) ?? 0));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) ?? 0, indices.get(next) ?? 0));
      }
    }
    if (low.get(node) === indices.get(node)) {
      const component: string[] = [];
      for (;;) {
        const member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
        if (member === node) break;
      }
      if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component);
    }
  };
  for (const node of graph.keys()) if (!indices.has(node)) visit(node);
  return found;
}

const files = sourceFiles(root);
const graph = new Map<string, string[]>();
const problems: string[] = [];
const perFolder = new Map<string, number>();
for (const file of files) {
  const text = readFileSync(file, "utf8");
  graph.set(file, importsOf(file, text));
  const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
  if (lines > MAX_LINES)
    problems.push(`${relative(".", file)}: ${lines} lines (at most ${MAX_LINES})`);
  if (!file.endsWith(".d.ts"))
    perFolder.set(dirname(file), (perFolder.get(dirname(file)) ?? 0) + 1);
}
for (const [folder, count] of perFolder) {
  if (count > MAX_FILES_PER_FOLDER)
    problems.push(
      `${relative(".", folder)}/: ${count} source files (at most ${MAX_FILES_PER_FOLDER})`,
    );
}
for (const component of cycles(graph)) {
  problems.push(
    `import cycle of ${component.length}: ${component
      .map((f) => relative(".", f))
      .sort()
      .join(", ")}`,
  );
}
for (const problem of problems) console.log(problem);
console.log(
  `${files.length} files, ${perFolder.size} folders, ${problems.length === 0 ? "layout ok" : `${problems.length} problems`}`,
);
process.exitCode = problems.length === 0 ? 0 : 1;
