// Save a value as a JSON file, from the page itself (a blob: URL; the CSP allows no other
// origin, and the record is already here).
export function downloadJson(value: unknown, filename: string): void {
  const blob = new Blob([JSON.stringify(value, null, 1)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  link.click();
  // The click has started the download; the URL is not needed past this task.
  setTimeout(() => URL.revokeObjectURL(url), 0);
}
