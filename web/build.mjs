// Builds the web client with esbuild.
//
//   node build.mjs            web/dist: index.html, assets/app-HASH.js, assets/style-HASH.css
//   node build.mjs --check    fail if web/dist differs from a fresh build
//   node build.mjs --watch    rebuild web/dist on every change (development)
//   node build.mjs --tests    compile test/*.test.ts for `node --test` into .test-out
//
// The assets are named by their content's hash, so the edge lets browsers
// cache them for good (pkg/edge) and a new build has new names. The same
// sources and esbuild version give the same bytes, which `make test` checks.
import { build, context } from "esbuild";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(fileURLToPath(import.meta.url));
const arg = process.argv[2] ?? "";

const appOptions = (outdir) => ({
  absWorkingDir: root,
  entryPoints: { app: "src/main.ts", style: "src/style.css" },
  entryNames: "assets/[name]-[hash]",
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022", "chrome100", "firefox100", "safari15"],
  outdir,
  legalComments: "none",
  sourcemap: false,
  metafile: true,
  logLevel: "warning",
});

async function buildApp(outdir) {
  rmSync(outdir, { recursive: true, force: true });
  mkdirSync(outdir, { recursive: true });
  const r = await build(appOptions(outdir));
  writeIndex(outdir, r.metafile);
}

// writeIndex writes index.html naming the built script and style sheet.
function writeIndex(outdir, metafile) {
  const out = Object.keys(metafile.outputs).map((f) => relative(outdir, join(root, f)).split("\\").join("/"));
  const js = out.find((f) => f.endsWith(".js"));
  const css = out.find((f) => f.endsWith(".css"));
  const html = readFileSync(join(root, "src/index.html"), "utf8")
    .replace("APP_JS", "/" + js)
    .replace("APP_CSS", "/" + css);
  writeFileSync(join(outdir, "index.html"), html);
}

function listFiles(dir, prefix = "") {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(dir, join(prefix, e.name)) : [join(prefix, e.name)]).sort();
}

if (arg === "" || arg === "--build") {
  await buildApp(join(root, "dist"));
} else if (arg === "--check") {
  const tmp = mkdtempSync(join(tmpdir(), "fk-web-"));
  try {
    await buildApp(tmp);
    const want = listFiles(tmp);
    const have = listFiles(join(root, "dist"));
    if (want.join() !== have.join()) console.error(`web/dist holds ${have.join(", ")}; a fresh build gives ${want.join(", ")}`);
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
  // Fixed names outside assets/ (which the edge lets browsers cache for a
  // year): a reload always gets the latest build.
  const outdir = join(root, "dist");
  rmSync(outdir, { recursive: true, force: true });
  const ctx = await context({
    ...appOptions(outdir),
    entryNames: "[name]",
    minify: false,
    sourcemap: "inline",
    plugins: [{ name: "index", setup(b) { b.onEnd((r) => { if (r.metafile) writeIndex(outdir, r.metafile); }); } }],
  });
  await ctx.watch();
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
