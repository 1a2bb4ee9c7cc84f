// Builds the console into ../src/auwgent/dev/static (committed: the wheel ships it, and no
// Node is needed to install or run auwgent; docs/dev.md says why). `--tests` instead bundles
// test/*.test.tsx into .test-build/ for `node --test`.
//
// SOURCE_HASH in the output is the SHA-256 of every input (the same walk as
// tests/dev/test_console_build.py), so a test can tell when the committed build is stale.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "..", "src", "auwgent", "dev", "static");

/** The files the build reads, relative to console/, sorted. */
export function inputs() {
  const walk = (dir) =>
    readdirSync(join(here, dir), { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]);
  return [...walk("src"), "index.html", "build.mjs", "package-lock.json", "tsconfig.json"]
    .map((p) => p.split("\\").join("/"))
    .sort();
}

function sourceHash() {
  const hash = createHash("sha256");
  for (const file of inputs()) {
    hash.update(file + "\0");
    hash.update(readFileSync(join(here, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

const common = { bundle: true, jsx: "automatic", jsxImportSource: "preact", logLevel: "warning" };

if (process.argv.includes("--tests")) {
  const tests = readdirSync(join(here, "test")).filter((f) => f.endsWith(".test.tsx") || f.endsWith(".test.ts"));
  rmSync(join(here, ".test-build"), { recursive: true, force: true });
  await build({
    ...common,
    entryPoints: tests.map((f) => join(here, "test", f)),
    outdir: join(here, ".test-build"),
    outExtension: { ".js": ".mjs" },
    platform: "node",
    format: "esm",
    external: ["happy-dom"],
  });
} else {
  mkdirSync(out, { recursive: true });
  await build({
    ...common,
    entryPoints: [join(here, "src", "main.tsx")],
    outfile: join(out, "console.js"),
    format: "esm",
    target: "es2020",
    minify: true,
    legalComments: "none",
  });
  copyFileSync(join(here, "src", "console.css"), join(out, "console.css"));
  copyFileSync(join(here, "index.html"), join(out, "index.html"));
  writeFileSync(join(out, "SOURCE_HASH"), sourceHash() + "\n");
  console.log(`built the console into ${relative(process.cwd(), out)}`);
}
