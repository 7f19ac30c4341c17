// The workbench's figures (`make bench`), on the browser tests' server and Chromium:
//   cd web && npx playwright test -c e2e/bench/bench.config.ts
// Each *.bench.ts prints its figures; none runs with the specs (`npx playwright test`).
import { defineConfig } from "@playwright/test";
import { fileURLToPath } from "node:url";
import specs from "../../playwright.config";

const web = fileURLToPath(new URL("../..", import.meta.url));
const server = specs.webServer;
if (!server || Array.isArray(server)) throw new Error("the specs' config should name one web server");

export default defineConfig({
  ...specs,
  testDir: ".",
  testMatch: "*.bench.ts",
  outputDir: `${web}/test-results/bench`,
  reporter: [["list"]],
  // The server's paths are the web folder's, wherever Playwright is started from.
  webServer: { ...server, cwd: web },
});
