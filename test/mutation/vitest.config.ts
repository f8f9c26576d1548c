import { defineConfig } from "vitest/config";
import base from "../../vitest.config.ts";

/**
 * The suite restricted to the test files of one mutation group (MUTATION_TESTS, comma
 * separated), so a static mutant is activated before its module loads (Stryker's `testFiles`
 * activates it too late, stryker-js#6144) and no e2e test runs for a mutant of the core.
 */
const tests = (process.env.MUTATION_TESTS ?? "").split(",").filter((file) => file.length > 0);
if (tests.length === 0) throw new Error("MUTATION_TESTS names no test file");

// One file at a time, as before the suite ran two: the group shares the cores with the team.
export default defineConfig({ ...base, test: { ...base.test, include: tests, maxWorkers: 1 } });
