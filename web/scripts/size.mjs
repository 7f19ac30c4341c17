// The bundle budget (issue 21): the entry chunk at most 130 kB gzip, all JavaScript at most
// 350 kB gzip. Reads the build the server serves (src/opsgym/server/ui_dist).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

const BUILD = new URL("../../src/opsgym/server/ui_dist/", import.meta.url).pathname;
const ENTRY_LIMIT = 130 * 1024;
const ALL_LIMIT = 350 * 1024;

const index = readFileSync(join(BUILD, "index.html"), "utf8");
const entry = /<script type="module"[^>]*src="\/ui\/assets\/([^"]+\.js)"/.exec(index)?.[1];
if (!entry) throw new Error("index.html names no entry script");
const sizes = Object.fromEntries(
  readdirSync(join(BUILD, "assets"))
    .filter((f) => f.endsWith(".js"))
    .map((f) => [f, gzipSync(readFileSync(join(BUILD, "assets", f)), { level: 9 }).length]),
);
const all = Object.values(sizes).reduce((a, b) => a + b, 0);
const kB = (n) => `${(n / 1024).toFixed(1)} kB`;
console.log(`entry ${entry}: ${kB(sizes[entry])} gzip (limit ${kB(ENTRY_LIMIT)})`);
console.log(`all JS (${Object.keys(sizes).length} chunks): ${kB(all)} gzip (limit ${kB(ALL_LIMIT)})`);
let failed = false;
if (sizes[entry] > ENTRY_LIMIT) { console.error("entry chunk over budget"); failed = true; }
if (all > ALL_LIMIT) { console.error("JavaScript over budget"); failed = true; }
process.exit(failed ? 1 : 0);
