import { afterAll } from "vitest";
import { removeScratchOutdirs } from "./scratch-outdir.ts";

/** Setup file of every test file: the synth directories it made go when it ends. */
afterAll(removeScratchOutdirs);
