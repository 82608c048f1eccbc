// Live page against the real supervisor with the demo cameras: a tile per camera, WebRTC
// video really playing (frames decoded, time advancing), layouts, enlarge with the
// main/sub switch, back to the grid. Screenshots desktop and mobile.
import { check, shoot, waitFor, waitStreaming } from './helpers.mjs';
import { uiSession } from './session.mjs';

// A <video> that decodes: has a picture size and its time advances.
async function playing(page, selector, what) {
	await waitFor(() => page.evaluate((sel) => {
		const v = document.querySelector(sel);
		return v && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}, selector), 30000, what).catch(async (err) => {
		const said = await page.evaluate(() => [...document.querySelectorAll('.tile')].map((t) => `${t.dataset.camera}: ${t.querySelector('.badge').textContent} ${t.querySelector('.msg').textContent}`).join('; '));
		throw new Error(`${err.message} (tiles say: ${said})`);
	});
	const t0 = await page.evaluate((sel) => document.querySelector(sel).currentTime, selector);
	await page.waitForTimeout(1500);
	const t1 = await page.evaluate((sel) => document.querySelector(sel).currentTime, selector);
	const q = await page.evaluate((sel) => {
		const v = document.querySelector(sel);
		return v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality().totalVideoFrames : -1;
	}, selector);
	check(t1 > t0 && q !== 0, `${what}: time advances ${t0.toFixed(2)} -> ${t1.toFixed(2)} s, ${q} frames decoded`);
}

export default async function () {
	const s = await uiSession();
	const cams = await waitStreaming(s.kp, s.token, 2);
	const { page } = s;
	await page.goto(s.kp.url + '/');
	await page.waitForSelector('.tile', { timeout: 15000 });
	const tiles = await page.$$eval('.tile', (t) => t.map((x) => x.dataset.camera));
	check(tiles.length === cams.length, `one tile per camera (${tiles.join(', ')})`);
	await playing(page, `.tile[data-camera="${tiles[0]}"] video`, `live video of ${tiles[0]} in the grid`);
	check(await page.$eval(`.tile[data-camera="${tiles[0]}"] .badge`, (b) => b.dataset.state) === 'live', 'the tile says Live');
	check(/\d\d:\d\d:\d\d/.test(await page.textContent('.tile .clock')), 'the tile shows the time');
	// Off a hub there is no site bar; nothing stands in its place (it once read "null").
	const stray = await page.evaluate(() => [...document.getElementById('app').childNodes]
		.filter((n) => n.nodeType === Node.TEXT_NODE && n.textContent.trim()).map((n) => n.textContent));
	check(stray.length === 0, `no stray text on the page (${JSON.stringify(stray)})`);

	await page.click('button[aria-label="3 by 3 grid"]');
	check(await page.$eval('.grid', (g) => g.style.getPropertyValue('--cols')) === '3', 'layout 3x3 applies');
	await page.click('button[aria-label="2 by 2 grid"]');
	await playing(page, `.tile[data-camera="${tiles[0]}"] video`, 'the same tile keeps playing across layout changes');
	await shoot(page, 'live-desktop');

	await page.click(`.tile[data-camera="${tiles[0]}"]`);
	await page.waitForSelector('.live-enlarged', { timeout: 5000 });
	check((await page.$$('.tile')).length === 1, 'click enlarges one camera');
	await page.click('.seg[aria-label=Stream] >> text=Sub');
	await playing(page, '.tile video', `enlarged ${tiles[0]} on the sub stream`);
	await page.click('.seg[aria-label=Stream] >> text=Main');
	await playing(page, '.tile video', `enlarged ${tiles[0]} on the main stream`);
	await page.keyboard.press('Escape');
	await page.waitForSelector('.live-enlarged', { state: 'detached', timeout: 5000 }).catch(() => {});
	check(!(await page.$('body.live-enlarged')), 'Escape returns to the grid');

	// Automatic reconnect: restart rtcd; the tile shows it lost the stream, then plays again.
	await page.evaluate((cam) => {
		const b = document.querySelector(`.tile[data-camera="${cam}"] .badge`);
		window.badgeStates = [];
		new MutationObserver(() => window.badgeStates.push(b.dataset.state)).observe(b, { attributes: true });
	}, tiles[0]);
	const stop = s.guard.allow(/WebSocket|rtc/);
	s.kp.expectRestarts('rtcd');
	await s.kp.ctl(['restart', 'rtcd']);
	await waitFor(() => page.evaluate(() => window.badgeStates.some((x) => x !== 'live')), 20000, 'the tile leaves the Live state after rtcd restarts');
	await waitFor(() => page.evaluate((cam) => document.querySelector(`.tile[data-camera="${cam}"] .badge`).dataset.state === 'live', tiles[0]), 30000, 'the tile is Live again');
	await playing(page, `.tile[data-camera="${tiles[0]}"] video`, 'after rtcd restarted, the tile reconnected by itself');
	stop();
	check(true, `states seen during the restart: ${[...new Set(await page.evaluate(() => window.badgeStates))].join(' -> ')}`);
	s.guard.assertClean('the live page');

	const m = await s.mobile();
	await m.page.goto(s.kp.url + '/');
	await m.page.waitForSelector('.tile video', { timeout: 15000 });
	await playing(m.page, '.tile video', 'live video on a phone');
	await shoot(m.page, 'live-mobile');
	m.guard.assertClean('the mobile live page');
}
