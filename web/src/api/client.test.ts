import { describe, expect, it } from "vitest";
import { ApiError, token, unwrap } from "./client";

describe("ApiError", () => {
  it("names each field of a 422", () => {
    const error = new ApiError(422, [
      { loc: ["body", "args", "target"], msg: "Input should be 'all', 'deploy', 'migration' or 'router'" },
    ]);
    expect(error.fields).toEqual([
      { field: "args.target", message: "Input should be 'all', 'deploy', 'migration' or 'router'" },
    ]);
    expect(error.message).toBe("args.target: Input should be 'all', 'deploy', 'migration' or 'router'");
  });

  it("keeps a plain detail as its message", () => {
    expect(new ApiError(404, "no episode 7").message).toBe("no episode 7");
  });
});

describe("unwrap", () => {
  it("throws the server's detail on an error answer", () => {
    const response = new Response(null, { status: 409 });
    expect(() => unwrap({ error: { detail: "the episode is over" }, response })).toThrow("the episode is over");
  });

  it("returns the data of a good answer", () => {
    expect(unwrap({ data: { a: 1 }, response: new Response(null, { status: 200 }) })).toEqual({ a: 1 });
  });
});

describe("token", () => {
  it("lives in sessionStorage, never localStorage", () => {
    token.set("s3cret");
    expect(sessionStorage.getItem("opsgym.token")).toBe("s3cret");
    expect(JSON.stringify({ ...localStorage })).not.toContain("s3cret");
    token.clear();
    expect(token.get()).toBeNull();
  });
});
