// Builds the console into ../src/auwgent/dev/static (committed: the wheel ships it, and no
// Node is needed to install or run auwgent; docs/dev.md says why). `--tests` instead bundles
// test/*.test.tsx into .test-build/ for `node --test`.
//
// SOURCE_HASH in the output is the SHA-256 of every input (the same walk as
// tests/dev/test_console_build.py), so a test can tell when the committed build is stale.
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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
  const bundle = await build({
    ...common,
    entryPoints: [join(here, "src", "main.tsx")],
    outfile: join(out, "console.js"),
    format: "esm",
    target: "es2020",
    minify: true,
    legalComments: "none",
    write: false,
  });
  const files = {
    "console.js": bundle.outputFiles[0].contents,
    "console.css": readFileSync(join(here, "src", "console.css")),
    "index.html": readFileSync(join(here, "index.html")),
    SOURCE_HASH: Buffer.from(sourceHash() + "\n"),
  };
  // Only what changed is written: a server or a test reading the files meanwhile (the
  // artifact tests run scripts/build.sh) never sees one half written.
  let written = 0;
  for (const [name, contents] of Object.entries(files)) {
    const path = join(out, name);
    if (existsSync(path) && Buffer.compare(readFileSync(path), Buffer.from(contents)) === 0) continue;
    writeFileSync(path, contents);
    written += 1;
  }
  console.log(`built the console into ${relative(process.cwd(), out)} (${written} file(s) changed)`);
}
