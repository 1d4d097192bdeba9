// Bundle the dashboard page a scheduler serves: src/standalone.ts (the lab extension's panes,
// without JupyterLab) and the CSS it imports, for the browser, into xsched/dashboard/static/:
//   xsched-dashboard.js, xsched-dashboard.css   the page's script and style (esbuild, minified)
//   third-party-licenses.json                   the npm packages bundled in, with their licences
// Run by build.sh (node_modules from `npm ci`); xsched/dashboard/server.py serves the files.
import * as esbuild from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(here, '..', '..', 'xsched', 'dashboard', 'static');

fs.rmSync(out, { recursive: true, force: true });
fs.mkdirSync(out, { recursive: true });
const result = await esbuild.build({
  absWorkingDir: here,
  entryPoints: { 'xsched-dashboard': 'src/standalone.ts' },
  tsconfig: 'tsconfig.json',
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2020'],
  charset: 'utf8',
  legalComments: 'none', // (the licences go to third-party-licenses.json, whole)
  outdir: out,
  metafile: true,
  logLevel: 'warning'
});

// one entry per npm package any bundled file came from, as the lab extension's build lists them
const packages = new Map(); // package directory -> its bundled files
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//);
  if (match) {
    packages.set(match[1], [...(packages.get(match[1]) || []), input]);
  }
}
/** The copyright and licence lines of the comments in a package's bundled files (for a package
 * that ships no licence file: its notices are in its sources). */
function notices(files) {
  const lines = new Set();
  for (const file of files) {
    for (const line of fs.readFileSync(path.join(here, file), 'utf8').split('\n')) {
      const comment = line.match(/^\s*(?:\/\/|\/?\*|\|)\s?(.*)$/);
      if (comment && /copyright|licen[cs]e/i.test(comment[1])) {
        lines.add(comment[1].trim());
      }
    }
  }
  return [...lines].join('\n');
}
/** A package's own sources (src/), where the notices are when its built files lost them. */
function sources(dir) {
  const src = path.join(dir, 'src');
  return fs.existsSync(path.join(here, src)) ? fs.readdirSync(path.join(here, src)).map(f => path.join(src, f)) : [];
}
const licences = [];
for (const [dir, files] of packages) {
  const pkg = JSON.parse(fs.readFileSync(path.join(here, dir, 'package.json'), 'utf8'));
  const file = fs.readdirSync(path.join(here, dir)).find(f => /^(licen[cs]e|copying)(\.|$)/i.test(f));
  licences.push({
    name: pkg.name,
    versionInfo: pkg.version,
    licenseId: typeof pkg.license === 'string' ? pkg.license : pkg.license?.type || 'UNKNOWN',
    extractedText: file ? fs.readFileSync(path.join(here, dir, file), 'utf8') : notices(files) || notices(sources(dir))
  });
}
licences.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
fs.writeFileSync(path.join(out, 'third-party-licenses.json'), JSON.stringify({ packages: licences }, null, 2) + '\n');
for (const file of fs.readdirSync(out).sort()) {
  console.log(`  xsched/dashboard/static/${file}  ${fs.statSync(path.join(out, file)).size} bytes`);
}
