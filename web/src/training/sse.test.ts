import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, token } from "../api/client";
import { follow } from "./sse";
import { LOG_KEPT, reduce, type JobStream } from "./useJobStream";

function body(text: string): Response {
  const bytes = new TextEncoder().encode(text);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes.slice(0, 20)); // an event split across chunks
      controller.enqueue(bytes.slice(20));
      controller.close();
    },
  });
  return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
}

afterEach(() => {
  vi.unstubAllGlobals();
  token.clear();
});

describe("follow", () => {
  it("sends the token in a header, takes a dropped stream up again from its last id, and stops at end", async () => {
    token.set("s3cret");
    const calls: { url: string; headers: Record<string, string> }[] = [];
    const answers = [
      body('id: 10.1\nevent: status\ndata: {"status":"running"}\n\nid: 42.1\nevent: log\ndata: {"lines":["a"]}\n\n'),
      body('id: 42.2\nevent: metrics\ndata: {"curves":{}}\n\nid: 42.2\nevent: end\ndata: {"status":"succeeded"}\n\n'),
    ];
    vi.stubGlobal("fetch", async (url: string, init: RequestInit) => {
      calls.push({ url, headers: init.headers as Record<string, string> });
      return answers.shift();
    });
    const seen: string[] = [];
    await follow("/api/training/jobs/j/stream", (e) => seen.push(e.event ?? ""), new AbortController().signal);
    expect(seen).toEqual(["status", "log", "metrics", "end"]);
    expect(calls.map((c) => c.url)).toEqual(["/api/training/jobs/j/stream", "/api/training/jobs/j/stream"]);
    expect(calls[0].headers.Authorization).toBe("Bearer s3cret");
    expect(calls[0].headers["Last-Event-ID"]).toBeUndefined();
    expect(calls[1].headers["Last-Event-ID"]).toBe("42.1");
  });

  it("rejects with the server's refusal", async () => {
    vi.stubGlobal("fetch", async () => new Response(JSON.stringify({ detail: "no training job 'x'" }), { status: 404 }));
    const refused = follow("/api/training/jobs/x/stream", () => {}, new AbortController().signal);
    await expect(refused).rejects.toBeInstanceOf(ApiError);
    await expect(refused).rejects.toThrow("no training job 'x'");
  });
});

describe("the job stream's state", () => {
  it("keeps the last lines of the log and counts the ones it dropped", () => {
    let state: JobStream = reduce({} as JobStream, { type: "reset" });
    state = reduce(state, { type: "log", lines: Array.from({ length: LOG_KEPT }, (_, i) => `line ${i}`) });
    state = reduce(state, { type: "log", lines: ["last"] });
    expect(state.lines).toHaveLength(LOG_KEPT);
    expect(state.lines.at(-1)).toBe("last");
    expect(state.lines[0]).toBe("line 1");
    expect(state.dropped).toBe(1);
  });
});
