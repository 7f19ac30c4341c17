// A finished job's run folder: each file with its size and SHA-256 (to check a download
// against), downloaded one by one or all together as a tar.gz.
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, unwrap } from "../api/client";
import { ErrorNote, Loading } from "../components/ErrorNote";
import { download } from "./download";

function size(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["kB", "MB", "GB", "TB"];
  let n = bytes / 1024;
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i += 1;
  }
  return `${n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

/** A file's path in a URL: each segment encoded, the slashes kept. */
const encodePath = (path: string) => path.split("/").map(encodeURIComponent).join("/");

export function Files({ name }: { name: string }) {
  const files = useQuery({
    queryKey: ["training", "artifacts", name],
    queryFn: async () => unwrap(await api.GET("/api/training/jobs/{name}/artifacts", { params: { path: { name } } })),
  });
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const base = `/api/training/jobs/${encodeURIComponent(name)}`;
  const get = async (url: string, filename: string) => {
    setError(null);
    setBusy(filename);
    try {
      await download(url, filename);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  return (
    <section aria-labelledby="files-title">
      <h2 id="files-title">Files</h2>
      {files.isPending && <Loading what="the files" />}
      <ErrorNote error={files.error} />
      <ErrorNote error={error} />
      {files.data && (
        <>
          <button type="button" onClick={() => get(`${base}/archive.tar.gz`, `${name}.tar.gz`)} disabled={busy !== null}>
            Download the run folder (.tar.gz)
          </button>
          <div className="scroll-box" tabIndex={0} role="region" aria-label="The run's files">
            <table className="files" data-testid="files">
              <thead>
                <tr>
                  <th scope="col">File</th>
                  <th scope="col" className="num">
                    Size
                  </th>
                  <th scope="col">SHA-256</th>
                  <th scope="col">
                    <span className="sr-only">Download</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {files.data.files.map((f) => (
                  <tr key={f.path} data-file={f.path} data-sha256={f.sha256}>
                    <td>
                      <code>{f.path}</code>
                    </td>
                    <td className="num">{size(f.size)}</td>
                    <td>
                      <code className="hash">{f.sha256}</code>
                    </td>
                    <td>
                      <button
                        type="button"
                        onClick={() => get(`${base}/files/${encodePath(f.path)}`, f.path.split("/").at(-1)!)}
                        disabled={busy !== null}
                        aria-label={`Download ${f.path}`}
                      >
                        Download
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
