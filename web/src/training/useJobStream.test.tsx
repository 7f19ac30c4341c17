import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { act, renderHook, waitFor } from "@testing-library/react";
import type { ReactNode } from "react";
import { afterEach, describe, expect, it, vi } from "vitest";
import { token } from "../api/client";
import { useJobStream } from "./useJobStream";

afterEach(() => {
  vi.unstubAllGlobals();
  token.clear();
});

describe("useJobStream", () => {
  it("starts again with the token once one is given after a 401", async () => {
    const seen: (string | null)[] = [];
    vi.stubGlobal(
      "fetch",
      vi.fn(async (_url: string, init: RequestInit) => {
        const auth = (init.headers as Record<string, string>).Authorization ?? null;
        seen.push(auth);
        if (!auth) return new Response(JSON.stringify({ detail: "missing or wrong bearer token" }), { status: 401 });
        return new Response("event: end\ndata: {}\n\n", { status: 200, headers: { "content-type": "text/event-stream" } });
      }),
    );
    const client = new QueryClient();
    const wrapper = ({ children }: { children: ReactNode }) => <QueryClientProvider client={client}>{children}</QueryClientProvider>;
    const { result } = renderHook(() => useJobStream("job-1"), { wrapper });
    await waitFor(() => expect(result.current.error).not.toBeNull());
    act(() => token.set("t0ken"));
    await waitFor(() => expect(result.current.ended).toBe(true));
    expect(seen).toEqual([null, "Bearer t0ken"]);
    expect(result.current.error).toBeNull();
  });
});
