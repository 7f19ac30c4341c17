// The workbench's figures (`make bench`; not part of `make test`): their own server on a store of
// 10,000 episodes (serve_bench.py), Debian's Chromium as the specs use it. Run from web/:
//   PYTHON=../.venv/bin/python npx playwright test -c e2e/bench/playwright.config.ts
import { defineConfig } from "@playwright/test";
import { fileURLToPath } from "node:url";
import base from "../../playwright.config";

const PORT = Number(process.env.BENCH_PORT ?? 8766);
const PYTHON = process.env.PYTHON ?? "../.venv/bin/python";

export default defineConfig({
  ...base,
  testDir: ".",
  testMatch: "*.bench.ts",
  timeout: 120_000,
  outputDir: "../../test-results/bench",
  use: { ...base.use, baseURL: `http://127.0.0.1:${PORT}` },
  webServer: {
    command: `${PYTHON} e2e/bench/serve_bench.py --port ${PORT}`,
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    url: `http://127.0.0.1:${PORT}/health`,
    reuseExistingServer: false,
    timeout: 180_000,
    stdout: "pipe",
    stderr: "pipe",
  },
});
