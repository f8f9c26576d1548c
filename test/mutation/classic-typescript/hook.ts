import { registerHooks } from "node:module";
import { pathToFileURL } from "node:url";

/**
 * Loaded into Stryker's processes (`--import`): Stryker's core and TypeScript checker import
 * `typescript` for its compiler API, which TypeScript 7 (the project's) no longer has, so their
 * imports get TypeScript 6 from this folder instead. Nothing else is redirected.
 */
const here = pathToFileURL(`${import.meta.dirname}/package.json`).href;

registerHooks({
  resolve(specifier, context, nextResolve) {
    const fromStryker = context.parentURL?.includes("/node_modules/@stryker-mutator/") ?? false;
    if (specifier === "typescript" && fromStryker) {
      return nextResolve(specifier, { ...context, parentURL: here });
    }
    if (specifier === "@typescript/native/unstable/sync" && fromStryker) {
      return nextResolve("typescript/unstable/sync", context);
    }
    return nextResolve(specifier, context);
  },
});
