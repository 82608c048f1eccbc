// Adding a camera found on the network from the Settings page, in a network namespace
// this test makes (its broadcasts reach nothing else): a veth pair 10.77.0.1/24 -
// 10.77.0.2/24 and a Reolink test camera on UDP 2015 with a UID. An admin clicks "Find
// cameras", uses the Reolink camera it lists (its URL, the password as ${KP_CAM_PW}),
// plans, applies, and sees the camera playing in the live grid. Runs as root (unshare);
// skipped otherwise.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { check, waitFor, shoot, atExit, BUILD_ROOT } from './helpers.mjs';
import { uiSession } from './session.mjs';

const UID = '95270000FOUNDCAM';

if (process.env.KP_TEST_NETNS !== '1') {
	if (process.getuid() !== 0 || spawnSync('unshare', ['--version']).status !== 0) {
		console.log('SKIP: needs root and unshare(1) for a network namespace');
		process.exit(77);
	}
	const r = spawnSync('unshare', ['--net', process.execPath, ...process.argv.slice(1)], { stdio: 'inherit', env: { ...process.env, KP_TEST_NETNS: '1' } });
	process.exit(r.status ?? 1);
}

function startReolink(dir) {
	const fx = join(BUILD_ROOT, 'test', 'fixtures');
	const proc = spawn(join(BUILD_ROOT, 'test', 'camera', 'keeppeek-test-camera'),
		['--main', join(fx, 'main.h264'), '--sub', join(fx, 'sub.h264'), '--host', '0.0.0.0', '--bcudp-port', '2015', '--uid', UID, '--user', 'admin', '--password', 'cam-pass'],
		{ cwd: dir, stdio: ['ignore', 'pipe', 'inherit'] });
	atExit(() => proc.kill('SIGTERM'));
	return new Promise((ok, bad) => {
		proc.stdout.on('data', (d) => d.toString().includes('ready') && ok());
		proc.on('exit', (c) => bad(new Error(`test camera exited ${c}`)));
	});
}

export default async function () {
	for (const args of [['link', 'set', 'lo', 'up'], ['link', 'add', 'kp0', 'type', 'veth', 'peer', 'name', 'kp1'],
		['addr', 'add', '10.77.0.1/24', 'dev', 'kp0'], ['addr', 'add', '10.77.0.2/24', 'dev', 'kp1'],
		['link', 'set', 'kp0', 'up'], ['link', 'set', 'kp1', 'up'], ['route', 'add', '224.0.0.0/4', 'dev', 'kp0']])
		execFileSync('ip', args);
	process.env.KP_CAM_PW = 'cam-pass'; // keeppeekd inherits it
	const s = await uiSession({
		async config(dir, port) {
			await startReolink(dir);
			return `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n`;
		},
	});
	const { page, kp } = s;
	await page.goto(kp.url + '/settings.html');
	await page.click('form[aria-label="Add a camera"] >> text=Find cameras');
	await page.waitForSelector('.cfg-found li[data-found=baichuan] button', { timeout: 15000 });
	check((await page.textContent('.cfg-found li[data-found=baichuan]')).includes(UID), 'Find cameras lists the Reolink camera by its UID');
	await page.click('.cfg-found li[data-found=baichuan] button');
	const url = await page.inputValue('form[aria-label="Add a camera"] input[name=url]');
	check(url === `bcudp://admin:\${CAMERA_PASSWORD}@10.77.0.1/?uid=${UID}`, `Use fills the URL to start from (${url})`);
	await page.fill('form[aria-label="Add a camera"] input[name=url]', url.replace('${CAMERA_PASSWORD}', '${KP_CAM_PW}'));
	await page.selectOption('select[name=streams]', 'main');
	await shoot(page, 'settings-found');
	await page.click('form[aria-label="Add a camera"] >> text=Plan');
	await page.waitForSelector('.cfg-plan:not([hidden]) .cfg-diff li', { timeout: 10000 });
	await page.click('.cfg-plan >> text=Apply');
	const name = `reolink-${UID.slice(-4).toLowerCase()}`;
	await page.waitForSelector(`.cfg-table tr[data-camera="${name}"]`, { timeout: 10000 });
	await page.goto(kp.url + '/');
	await waitFor(() => page.evaluate((n) => {
		const v = document.querySelector(`.tile[data-camera="${n}"] video`);
		return v && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}, name), 40000, 'the camera found plays in the live grid');
	check(true, `the camera found (${name}) plays in the live grid`);
	s.guard.assertClean('finding and adding a camera');
}
