// Downloads with the token in a header, never in a URL: fetch the file, hand the browser an
// object URL of its bytes, and let that go once the download has started.
import { ApiError, authHeaders, UNAUTHORISED } from "../api/client";

export async function download(url: string, filename: string): Promise<void> {
  const response = await fetch(url, { headers: authHeaders(), cache: "no-store" });
  if (response.status === 401) window.dispatchEvent(new Event(UNAUTHORISED));
  if (!response.ok) {
    let detail: unknown;
    try {
      detail = ((await response.json()) as { detail?: unknown }).detail;
    } catch {
      detail = undefined;
    }
    throw new ApiError(response.status, detail);
  }
  const blob = await response.blob();
  const href = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = href;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  // The click has handed the bytes to the browser's download; the URL is not needed after it.
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}
