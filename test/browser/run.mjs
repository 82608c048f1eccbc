// Runs one browser test file (node test/browser/run.mjs test_x.mjs): imports it, calls
// its default export, prints the result, and always cleans up (browser, servers,
// supervisor). Exit 0 pass, 1 fail.
import { resolve, dirname, basename } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { runCleanups, failureShots, assertNoRestarts } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const file = process.argv[2];
if (!file) {
	console.error('usage: node run.mjs test_NAME.mjs');
	process.exit(2);
}
const name = basename(file);
let code = 0;
const killer = setTimeout(() => {
	console.error(`${name}: still running after ${process.env.KP_BROWSER_TIMEOUT_S || 170} s; cleaning up`);
	runCleanups().finally(() => process.exit(1));
}, (+process.env.KP_BROWSER_TIMEOUT_S || 170) * 1000);
for (const sig of ['SIGTERM', 'SIGINT'])
	process.on(sig, () => runCleanups().finally(() => process.exit(1)));
try {
	const mod = await import(pathToFileURL(resolve(here, file)).href);
	await mod.default();
	assertNoRestarts();
	console.log(`PASS ${name}`);
} catch (err) {
	console.error(err && err.stack ? err.stack : String(err));
	await failureShots(name.replace(/\.mjs$/, ''));
	console.error(`FAIL ${name}`);
	code = 1;
} finally {
	clearTimeout(killer);
	await runCleanups();
}
process.exit(code);
