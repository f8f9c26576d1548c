import { describe, expect, it } from "vitest";
import { configSchema } from "../../../../functions/core/config/config-schema.ts";
import {
  callBudgetError,
  upstreamCallBudget,
  withinCallBudget,
} from "../../../../functions/core/request/attempts/call-budget.ts";

describe("upstream call budget (max_upstream_calls)", () => {
  it.each<{ limit: number; made: number; left: number }>([
    { limit: 50, made: 0, left: 50 },
    { limit: 50, made: 49, left: 1 },
    { limit: 50, made: 50, left: 0 },
    { limit: 50, made: 80, left: 0 },
    { limit: 3, made: -1, left: 3 },
  ])("$made calls made of $limit: $left left", ({ limit, made, left }) => {
    expect(upstreamCallBudget({ max_upstream_calls: limit }, made)).toBe(left);
  });

  it.each<{ name: string; made: number; wanted: string[]; send: string[]; refused: string[] }>([
    {
      name: "room for the whole round",
      made: 0,
      wanted: ["a", "b"],
      send: ["a", "b"],
      refused: [],
    },
    {
      name: "room for part of it, in order",
      made: 3,
      wanted: ["a", "b", "c"],
      send: ["a"],
      refused: ["b", "c"],
    },
    { name: "no room", made: 4, wanted: ["a"], send: [], refused: ["a"] },
    { name: "nothing wanted", made: 4, wanted: [], send: [], refused: [] },
  ])("a round: $name", ({ made, wanted, send, refused }) => {
    expect(withinCallBudget({ max_upstream_calls: 4 }, made, wanted)).toEqual({ send, refused });
  });

  it("the error a refused call gets is EIP-1474 'limit exceeded', naming the limit", () => {
    expect(callBudgetError({ max_upstream_calls: 50 })).toEqual({
      code: -32005,
      message:
        "this request reached max_upstream_calls (50 upstream calls): send fewer calls per batch",
      reached: "this request reached max_upstream_calls (50 upstream calls)",
    });
  });

  it("defaults to 50 and may be set per network", () => {
    const config = configSchema.parse({
      networks: {
        a: { chain_id: 1, max_upstream_calls: 9, providers: [{ url: "https://a.test" }] },
      },
    });
    expect(config.max_upstream_calls).toBe(50);
    expect(config.networks.a?.max_upstream_calls).toBe(9);
  });
});
