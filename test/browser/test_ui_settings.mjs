// Settings page, the configuration editor, against the real supervisor with a
// configuration file and an RTSP test camera: an admin changes retention for two
// cameras at once (plan, difference, apply; the table and the file show it), adds a
// camera by URL (its password as ${NAME}) and sees it streaming in the live grid,
// removes it, and is told why a URL with a written-out password is refused; adds a
// viewer user and an API token (shown once, accepted, revoked); the viewer sees the
// table without any control and the API answers 403 to her plan. Screenshots desktop
// and mobile.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, shoot, waitFor, startTestCamera, launch, login, guard, DESKTOP } from './helpers.mjs';
import { uiSession } from './session.mjs';

export default async function () {
	process.env.KP_BT_CAM_PW = 'cam-pass'; // keeppeekd inherits it: URLs say ${KP_BT_CAM_PW}
	let camPort = 0;
	const s = await uiSession({
		async config(dir, port) {
			const cam = await startTestCamera(dir, 'rtsp');
			camPort = cam.port;
			let c = `; written by test_ui_settings\n[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n`;
			for (const name of ['yard-1', 'yard-2'])
				c += `\n# ${name}\n[camera "${name}"]\nurl = rtsp://admin:\${KP_BT_CAM_PW}@127.0.0.1:${cam.port}/main\n`;
			return c;
		},
	});
	const { page, kp } = s;
	const conf = join(kp.dir, 'keeppeek.conf');
	await page.goto(kp.url + '/settings.html');
	await page.waitForSelector('.cfg-table tr[data-camera="yard-2"]', { timeout: 15000 });
	const url = await page.textContent('.cfg-table tr[data-camera="yard-1"] td[data-key=url]');
	check(url.includes('${KP_BT_CAM_PW}') && !url.includes('cam-pass'), `the URL is shown as written, without the password (${url})`);
	s.guard.assertClean('the settings page');

	await page.check('input[aria-label="Select yard-1"]');
	await page.check('input[aria-label="Select yard-2"]');
	await page.selectOption('.cfg-form select[name=key]', 'retention_days');
	await page.fill('.cfg-form input[name=value]', '9');
	await page.click('text=Plan changes');
	await page.waitForSelector('.cfg-plan:not([hidden]) .cfg-diff li', { timeout: 10000 });
	const diff = await page.$$eval('.cfg-diff li', (l) => l.map((x) => x.textContent));
	check(diff.includes('yard-1: retention_days: 0 -> 9') && diff.includes('yard-2: retention_days: 0 -> 9') && diff.length === 2,
		`the plan shows both cameras' change (${diff.join('; ')})`);
	check(!readFileSync(conf, 'utf8').includes('retention_days'), 'nothing is written before Apply');
	await shoot(page, 'settings-plan-desktop');
	await page.click('.cfg-plan >> text=Apply');
	await waitFor(async () => (await page.textContent('.cfg-table tr[data-camera="yard-2"] td[data-key=retention_days]')) === '9', 10000, 'the table shows the new retention');
	const text = readFileSync(conf, 'utf8');
	check((text.match(/retention_days = 9\n/g) || []).length === 2 && text.startsWith('; written by test_ui_settings\n') && text.includes('\n# yard-2\n'),
		'the file has the new values, its comments kept');

	// A written-out password is refused, with the reason, and not echoed.
	const allow = s.guard.allow(/HTTP 400: POST .*\/api\/v1\/config\/plan/);
	const allowConsole = s.guard.allow(/console error: Failed to load resource: the server responded with a status of 400/);
	await page.fill('input[name=name]', 'bad');
	await page.fill('input[name=url]', `rtsp://admin:hunter2@127.0.0.1:${camPort}/main`);
	await page.click('form[aria-label="Add a camera"] >> text=Plan');
	await waitFor(async () => (await page.textContent('.cfg [role=status]')).includes('carries a password'), 10000, 'the refusal is shown');
	check(!(await page.textContent('.cfg [role=status]')).includes('hunter2'), 'the password is not echoed');
	allow();
	allowConsole();

	await page.fill('input[name=name]', 'porch');
	await page.fill('input[name=url]', `rtsp://admin:\${KP_BT_CAM_PW}@127.0.0.1:${camPort}/main`);
	await page.selectOption('select[name=streams]', 'main');
	await page.click('form[aria-label="Add a camera"] >> text=Test connection');
	await waitFor(async () => (await page.textContent('.cfg [role=status]')).startsWith('The camera answers: H264 1920×1080'), 15000, 'the connection test says the camera answers');
	check(true, `Test connection: ${await page.textContent('.cfg [role=status]')}`);
	await page.click('form[aria-label="Add a camera"] >> text=Plan');
	await page.waitForSelector('.cfg-plan:not([hidden]) .cfg-diff li', { timeout: 10000 });
	check((await page.$$eval('.cfg-diff li', (l) => l.map((x) => x.textContent))).includes('porch: url: set'), 'adding shows the URL as set, not its value');
	await page.click('.cfg-plan >> text=Apply');
	await page.waitForSelector('.cfg-table tr[data-camera="porch"]', { timeout: 10000 });
	await page.goto(kp.url + '/');
	await page.waitForSelector('.tile[data-camera="porch"]', { timeout: 15000 });
	await waitFor(() => page.evaluate(() => {
		const v = document.querySelector('.tile[data-camera="porch"] video');
		return v && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}), 30000, 'the added camera plays in the live grid');
	check(true, 'the added camera plays in the live grid');
	s.guard.assertClean('the live grid with the added camera');

	await page.goto(kp.url + '/settings.html');
	await page.waitForSelector('.cfg-table tr[data-camera="porch"]', { timeout: 15000 });
	await page.click('button[aria-label="Remove porch"]');
	await page.waitForSelector('.cfg-plan:not([hidden]) .cfg-diff li', { timeout: 10000 });
	await page.click('.cfg-plan >> text=Apply');
	await waitFor(async () => !(await page.$('.cfg-table tr[data-camera="porch"]')), 10000, 'the removed camera leaves the table');
	check(!readFileSync(conf, 'utf8').includes('porch'), 'and the file');
	// Users and tokens: add a viewer, who then signs in; a token shown once, then revoked.
	await page.fill('form[aria-label="Add a user"] input[name=user]', 'carol');
	await page.fill('form[aria-label="Add a user"] input[name=password]', 'carol-pass-1');
	await page.click('form[aria-label="Add a user"] >> text=Add user');
	await page.waitForSelector('tr[data-user="carol"]', { timeout: 10000 });
	check((await page.$eval('tr[data-user="carol"] select', (e) => e.value)) === 'viewer', 'a user added from the page is listed with her role');
	await page.fill('form[aria-label="Create an API token"] input[name=token]', 'detector');
	await page.click('form[aria-label="Create an API token"] >> text=Create token');
	await page.waitForSelector('.cfg-token:not([hidden]) code', { timeout: 10000 });
	const token = await page.textContent('.cfg-token code');
	check(token.startsWith('kp_') && (await page.$('tr[data-token="detector"]')) !== null, 'a token is created and shown once');
	const pub = await fetch(kp.url + '/api/v1/events', { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body: '{}' });
	check(pub.status === 400, `the publisher token is accepted (${pub.status}: an empty event is refused, not the token)`);
	await page.click('button[aria-label="Revoke token detector"]');
	await waitFor(async () => !(await page.$('tr[data-token="detector"]')), 10000, 'the revoked token leaves the list');
	await shoot(page, 'settings-users-desktop');
	s.guard.assertClean('users and tokens');

	const m = await s.mobile();
	await login(m.page, kp);
	await m.page.goto(kp.url + '/settings.html');
	await m.page.waitForSelector('.cfg-table tr[data-camera="yard-1"]', { timeout: 15000 });
	await shoot(m.page, 'settings-mobile');
	m.guard.assertClean('the settings page on mobile');

	// A viewer (the one added above): the table, no control; the API refuses a plan.
	const browser = await launch();
	const vp = await browser.newPage(DESKTOP);
	const vg = guard(vp, 'viewer');
	await login(vp, { ...kp, user: 'carol', password: 'carol-pass-1' });
	await vp.goto(kp.url + '/settings.html');
	await vp.waitForSelector('.cfg-table tr[data-camera="yard-1"]', { timeout: 15000 });
	check(!(await vp.$('.cfg-table input[type=checkbox]')) && !(await vp.$('.cfg-form')) && !(await vp.$('button[aria-label^="Remove"]')) && !(await vp.$('tr[data-user]')),
		'a viewer sees no checkbox, form, Remove button or user list');
	const forbid = vg.allow(/HTTP 403: POST .*\/api\/v1\/config\/plan|status of 403/);
	const st = await vp.evaluate(async () => {
		const csrf = document.cookie.split('; ').find((c) => c.startsWith('kp_csrf='))?.split('=')[1] || '';
		const r = await fetch('/api/v1/config/plan', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-KeepPeek-CSRF': csrf }, body: JSON.stringify({ cameras: 'yard-1', set: { record: 'off' } }) });
		return r.status;
	});
	forbid();
	check(st === 403, `a viewer's plan is refused with 403 (${st})`);
	vg.assertClean('the settings page as a viewer');
	const status = await kp.ctl(['status']);
	check(!/restart [1-9]|\s[1-9]\d*\s+restarts?/.test(status), 'keeppeekctl status shows no restart');
}
