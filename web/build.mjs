// Builds the web client with esbuild.
//
//   node build.mjs            web/dist: index.html, app.js, app.css (minified, deterministic)
//   node build.mjs --check    fail if web/dist differs from a fresh build
//   node build.mjs --watch    rebuild web/dist on every change (development)
//   node build.mjs --tests    compile test/*.test.ts for `node --test` into .test-out
//
// The file names are fixed; index.html asks for them with a content hash
// (?v=...) so a new build is never served from a stale cache. The same
// sources and esbuild version give the same bytes, which `make test` checks.
import { build, context } from "esbuild";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const arg = process.argv[2] ?? "";

const appOptions = (outdir) => ({
  absWorkingDir: root,
  entryPoints: { app: "src/main.ts" },
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome100", "firefox100", "safari15"],
  outdir,
  legalComments: "none",
  sourcemap: false,
  logLevel: "warning",
});

async function buildApp(outdir) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  await build(appOptions(outdir));
  await build({ absWorkingDir: root, entryPoints: { app: "src/style.css" }, bundle: true, minify: true, outdir, logLevel: "warning" });
  writeIndex(outdir);
}

function writeIndex(outdir) {
  const hash = (f) => createHash("sha256").update(readFileSync(join(outdir, f))).digest("hex").slice(0, 12);
  const html = readFileSync(join(root, "src/index.html"), "utf8")
    .replace("JS_HASH", hash("app.js"))
    .replace("CSS_HASH", hash("app.css"));
  writeFileSync(join(outdir, "index.html"), html);
}

if (arg === "" || arg === "--build") {
  await buildApp(join(root, "dist"));
} else if (arg === "--check") {
  const tmp = mkdtempSync(join(tmpdir(), "fk-web-"));
  try {
    await buildApp(tmp);
    const want = readdirSync(tmp).sort();
    const have = readdirSync(join(root, "dist")).sort();
    let drift = want.join() !== have.join();
    for (const f of want) {
      if (drift) break;
      drift = !readFileSync(join(tmp, f)).equals(readFileSync(join(root, "dist", f)));
      if (drift) console.error(`web/dist/${f} differs from a fresh build`);
    }
    if (drift) {
      console.error("web/dist is out of date: run `make web` and commit web/dist");
      process.exit(1);
    }
    console.log("web/dist is up to date");
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else if (arg === "--watch") {
  const outdir = join(root, "dist");
  const ctx = await context({
    ...appOptions(outdir),
    entryPoints: { app: "src/main.ts" },
    minify: false,
    sourcemap: "inline",
    plugins: [{ name: "index", setup(b) { b.onEnd(() => writeIndex(outdir)); } }],
  });
  const css = await context({ absWorkingDir: root, entryPoints: { app: "src/style.css" }, bundle: true, outdir });
  await Promise.all([ctx.watch(), css.watch()]);
  console.log("watching web/src; web/dist is rebuilt on every change (Ctrl-C to stop; run `make web` before committing)");
} else if (arg === "--tests") {
  const out = join(root, ".test-out");
  rmSync(out, { recursive: true, force: true });
  const tests = readdirSync(join(root, "test")).filter((f) => f.endsWith(".test.ts")).map((f) => `test/${f}`);
  await build({
    absWorkingDir: root, entryPoints: tests, bundle: true, platform: "node", format: "esm",
    outdir: out, outExtension: { ".js": ".mjs" }, logLevel: "warning",
  });
} else {
  console.error(`unknown argument ${arg}`);
  process.exit(2);
}
