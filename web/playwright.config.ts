// Browser tests: a real `opsgym serve` on loopback (e2e/serve.py: a seeded temporary store) and
// Debian's Chromium, headless. No browser is ever downloaded: CHROMIUM (default
// /usr/bin/chromium) must exist.
import { defineConfig } from "@playwright/test";

const PORT = Number(process.env.E2E_PORT ?? 8765);
const PYTHON = process.env.PYTHON ?? "../.venv/bin/python";

export default defineConfig({
  testDir: "e2e",
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  retries: 0,
  reporter: process.env.CI ? [["list"]] : [["list"]],
  outputDir: "test-results",
  use: {
    baseURL: `http://127.0.0.1:${PORT}`,
    viewport: { width: 1280, height: 900 },
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
      ],
    },
    trace: "off",
    screenshot: "only-on-failure",
  },
  webServer: {
    command: `${PYTHON} e2e/serve.py --port ${PORT} --fixtures e2e/.fixtures.json`,
    url: `http://127.0.0.1:${PORT}/health`,
    reuseExistingServer: false,
    timeout: 120_000,
    stdout: "pipe",
    stderr: "pipe",
  },
});
