/// <reference types="vitest/config" />
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

// Built into the Python package (package data), served by `opsgym serve` at /ui/.
export default defineConfig({
  base: "/ui/",
  plugins: [react()],
  build: {
    outDir: "../src/opsgym/server/ui_dist",
    emptyOutDir: true,
    sourcemap: false,
    // The CSP forbids inline scripts and styles: never inline assets as data: URLs of code.
    assetsInlineLimit: 0,
    reportCompressedSize: false,
  },
  server: {
    // `npm run dev` against a local `opsgym serve` on :8000.
    proxy: { "/api": "http://127.0.0.1:8000", "/health": "http://127.0.0.1:8000" },
  },
  test: {
    environment: "jsdom",
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/test-setup.ts"],
  },
});
