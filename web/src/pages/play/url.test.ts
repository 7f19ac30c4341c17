import { describe, expect, it } from "vitest";
import { playHref, readState, setupOf } from "./url";

describe("readState", () => {
  it("defaults to the first world, mixed, and a server-drawn seed", () => {
    expect(readState("", "fleet")).toEqual({
      env: "fleet",
      scenario: "mixed",
      split: "",
      seed: "",
      config: "",
      session: null,
      tool: null,
      step: null,
    });
  });

  it("reads a link back, and ignores a split or step that cannot be", () => {
    const state = readState("?env=release&scenario=deploy_timeout&split=test&seed=689&session=abc&tool=deploy&step=2", "fleet");
    expect(state).toMatchObject({ env: "release", split: "test", seed: "689", session: "abc", tool: "deploy", step: 2 });
    expect(readState("?split=holdout&step=-1", "fleet")).toMatchObject({ split: "", step: null });
    expect(readState("?step=0", "fleet").step).toBe(0);
  });
});

describe("playHref", () => {
  it("writes only what is set, and round-trips", () => {
    const state = readState('?env=fleet&scenario=mixed&config={"level":2}&session=s1&step=3', "release");
    const href = playHref(state);
    expect(href).toBe("/play?env=fleet&scenario=mixed&config=%7B%22level%22%3A2%7D&session=s1&step=3");
    expect(readState(href.slice("/play".length), "release")).toEqual(state);
  });

  it("drops the session with setupOf (a new episode's form)", () => {
    const state = readState("?env=oversight&seed=10&session=s1&tool=hold_release", "release");
    expect(playHref(setupOf(state))).toBe("/play?env=oversight&scenario=mixed&seed=10");
  });
});
