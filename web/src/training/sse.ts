// Server-sent events over fetch: a browser's EventSource cannot send the Authorization header,
// and the token never goes into a URL. A dropped connection is taken up again where it stopped
// (Last-Event-ID); the stream is over when the server says `end` or the caller aborts.
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { ApiError, authHeaders, UNAUTHORISED } from "../api/client";

const RETRY_MS = [500, 1000, 2000, 5000];

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

async function detail(response: Response): Promise<unknown> {
  try {
    return ((await response.json()) as { detail?: unknown }).detail;
  } catch {
    return undefined;
  }
}

/**
 * Read the events of `url` until the server ends the stream (an `end` event) or `signal` aborts.
 * Rejects with an ApiError when the server refuses the stream (a 401 also opens the token
 * dialog, a 404 names what is missing).
 */
export async function follow(url: string, onEvent: (event: EventSourceMessage) => void, signal: AbortSignal): Promise<void> {
  let lastId: string | undefined;
  let ended = false;
  let failures = 0;
  const parser = createParser({
    onEvent(event) {
      if (event.id) lastId = event.id;
      if (event.event === "end") ended = true;
      onEvent(event);
    },
  });
  while (!signal.aborted && !ended) {
    try {
      const headers: Record<string, string> = { ...authHeaders(), Accept: "text/event-stream" };
      if (lastId) headers["Last-Event-ID"] = lastId;
      const response = await fetch(url, { headers, signal, cache: "no-store" });
      if (response.status === 401) window.dispatchEvent(new Event(UNAUTHORISED));
      if (!response.ok || !response.body) throw new ApiError(response.status, await detail(response));
      parser.reset();
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        failures = 0;
        parser.feed(value);
      }
    } catch (error) {
      if (error instanceof ApiError) throw error;
      if (signal.aborted) return;
      // The connection dropped (a restart, a proxy): take it up again after a pause.
    }
    if (!ended) await pause(RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)], signal);
  }
}
