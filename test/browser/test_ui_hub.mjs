// A hub over two real sites (decision 0033): two keeppeekd with an RTSP test camera
// each ("front"), and a third in hub mode with a viewer token of each site in a file.
// Signed in to the hub only, the live page shows east/front and west/front and both
// tiles play live WebRTC video at once (media from each site straight to the browser:
// the answers' candidates are the sites'), with a line per site saying it is up; the
// timeline of a site camera draws its recorded ranges from the hub's coverage and plays
// stored video from it; an event published to a site is found by the events page's
// search of every camera, with its thumbnail through the hub. Then west stops: the site line says it is unreachable and
// east keeps playing.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { check, launch, login, guard, publishEvent, startKeeppeek, startTestCamera, waitFor, DESKTOP, shoot } from './helpers.mjs';

// A run of UDP ports for one site's rtcd, away from the default range.
const udpBase = () => 20000 + 100 * Math.floor(Math.random() * 350);

async function site(name) {
	let cam;
	const kp = await startKeeppeek({
		async config(dir, port) {
			cam = await startTestCamera(dir, `${name}-cam`);
			const lo = udpBase();
			return `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n` +
				`[rtc]\naddresses = 127.0.0.1\nudp_ports = ${lo}-${lo + 63}\n` +
				`[camera "front"]\nurl = ${cam.url}\nsub_url = ${cam.subUrl}\n`;
		},
	});
	const token = (await kp.ctl(['token', 'create', '--name', 'hub', '--role', 'viewer'])).trim();
	return { kp, token };
}

// A <video> that decodes: has a picture size and its time advances.
async function playing(page, selector, what) {
	await waitFor(() => page.evaluate((sel) => {
		const v = document.querySelector(sel);
		return v && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}, selector), 40000, what).catch(async (err) => {
		const said = await page.evaluate(() => [...document.querySelectorAll('.tile')].map((t) => `${t.dataset.camera}: ${t.querySelector('.badge').textContent} ${t.querySelector('.msg').textContent}`).join('; '));
		throw new Error(`${err.message} (tiles say: ${said})`);
	});
	const t0 = await page.evaluate((sel) => document.querySelector(sel).currentTime, selector);
	await page.waitForTimeout(1500);
	const t1 = await page.evaluate((sel) => document.querySelector(sel).currentTime, selector);
	check(t1 > t0, `${what}: time advances ${t0.toFixed(2)} -> ${t1.toFixed(2)} s`);
}

export default async function () {
	const east = await site('east');
	const west = await site('west');
	const hub = await startKeeppeek({
		async config(dir, port) {
			writeFileSync(join(dir, 'east.token'), east.token + '\n');
			writeFileSync(join(dir, 'west.token'), west.token + '\n');
			return `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n` +
				`[hub]\nenabled = yes\ntimeout_ms = 2000\n` +
				`[site "east"]\nurl = ${east.kp.url}\ntoken = file:${dir}/east.token\n` +
				`[site "west"]\nurl = ${west.kp.url}\ntoken = file:${dir}/west.token\n`;
		},
	});
	const browser = await launch();
	const page = await browser.newPage(DESKTOP);
	const g = guard(page, 'desktop');
	await login(page, hub);

	// Both sites' cameras stream before the page opens.
	await waitFor(async () => {
		const r = await page.evaluate(async () => (await fetch('/api/v1/hub/cameras')).json());
		return r.cameras.length === 2 && r.cameras.every((c) => c.streams.some((x) => x.state === 'streaming'));
	}, 30000, 'east/front and west/front streaming through the hub');

	await page.goto(hub.url + '/');
	await page.waitForSelector('.tile[data-camera="west/front"]', { timeout: 15000 });
	const tiles = await page.$$eval('.tile', (t) => t.map((x) => x.dataset.camera));
	check(tiles.join(',') === 'east/front,west/front', `one tile per site camera (${tiles.join(', ')})`);
	check(await page.$eval('.site[data-site="east"]', (e) => e.dataset.state) === 'up' &&
		await page.$eval('.site[data-site="west"]', (e) => e.dataset.state) === 'up', 'each site says it is up');
	await playing(page, '.tile[data-camera="east/front"] video', 'east/front plays live');
	await playing(page, '.tile[data-camera="west/front"] video', 'west/front plays live at the same time');
	await playing(page, '.tile[data-camera="east/front"] video', 'east/front still plays');
	await shoot(page, 'hub-live');

	// The timeline of a site camera: ranges from the hub's coverage, stored playback.
	const range = await waitFor(async () => {
		const now = Date.now();
		const j = await page.evaluate(async (q) => (await fetch('/api/v1/hub/coverage?' + q)).json(),
			`camera=east/front&from=${now - 3600000}&to=${now + 60000}&bucket=1h`);
		const main = j.cameras.length && j.cameras[0].streams.find((x) => x.name === 'main');
		const r = main && main.ranges[main.ranges.length - 1];
		return r && r[1] - r[0] > 10000 && r;
	}, 40000, '10 s of recording of east/front in the hub\'s coverage');
	await page.goto(`${hub.url}/timeline.html?camera=${encodeURIComponent('east/front')}&t=${range[0] + 2000}`);
	await page.waitForSelector('.tl [data-prim=range]', { timeout: 30000 });
	check(true, 'the timeline of east/front draws its recorded ranges');
	const target = await page.$$eval('.tl [data-prim=range]', (rs) => {
		const r = rs[rs.length - 1].getBoundingClientRect();
		return { x: r.left + r.width * 0.5, y: r.top + r.height / 2 };
	});
	await page.mouse.click(target.x, target.y);
	await waitFor(() => page.evaluate(() => {
		const x = document.querySelector('.player video');
		return x && x.readyState >= 2 && x.videoWidth > 0 && x.currentTime > 0;
	}), 30000, 'stored video of east/front plays through the hub');
	await shoot(page, 'hub-timeline');

	// An event of a site: found by the hub's search, its thumbnail fetched through the hub.
	const pub = (await east.kp.ctl(['token', 'create', '--name', 'pub', '--role', 'publisher'])).trim();
	const now = Date.now();
	await publishEvent(east.kp, pub, page, { id: 'hub-ev-1', revision: 1, camera: 'front', stream: 'main', start_ms: now - 5000, end_ms: now - 4000, labels: [{ name: 'person', score: 0.9 }] });
	await page.goto(hub.url + '/events.html');
	await page.waitForSelector('.ev-item[data-id="hub-ev-1"]', { timeout: 20000 });
	check((await page.textContent('.ev-item[data-id="hub-ev-1"]')).includes('east/front'), 'the event names east/front');
	await waitFor(() => page.evaluate(() => {
		const img = document.querySelector('.ev-item[data-id="hub-ev-1"] img.ev-thumb');
		return img && img.complete && img.naturalWidth > 0;
	}), 20000, 'its thumbnail comes through the hub');

	// West stops: the page says so and east goes on.
	await page.goto(hub.url + '/');
	await playing(page, '.tile[data-camera="east/front"] video', 'east/front plays again on the live page');
	const stop = g.allow(/west|unreachable|not reachable|502|503/i);
	process.kill(+readFileSync(join(west.kp.dir, 'run', 'keeppeekd.pid'), 'utf8').trim(), 'SIGTERM');
	await waitFor(() => page.evaluate(() => {
		const s = document.querySelector('.site[data-site="west"]');
		return s && s.dataset.state === 'down';
	}), 30000, 'the west line says it is unreachable');
	await playing(page, '.tile[data-camera="east/front"] video', 'east/front keeps playing with west gone');
	await shoot(page, 'hub-site-down');
	stop();
	g.assertClean('the hub pages');
}
