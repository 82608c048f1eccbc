// The timeline's hover preview on the demo (issue 20, decision 0025): hovering a recorded
// range with the mouse shows the recorded keyframe there (320 px JPEG), again from a fresh
// page once recorderd's cache is warm (the time from the pointermove's dispatch to the
// img's load event, performance.now, is printed; budgets live in perf/event-thumbnails,
// not in a test that shares the machine); a hover
// draws nothing of the timeline again (no mutation of its track), one preview element
// is reused, at most two requests are in flight, a time of a GOP already fetched is not
// asked again; on a phone, dragging the playhead with a finger shows it too, cold and
// warm. run.mjs checks that no worker restarted.
import { check, shoot, waitFor, waitStreaming } from './helpers.mjs';
import { uiSession } from './session.mjs';

// In the page: the dispatch time of the first pointermove after arm(), each load of the
// preview's img, and every change to the timeline's drawn track.
function instrument() {
	const tl = document.querySelector('.tl');
	window.pv = { armed: false, t0: 0, loads: [], trackMutations: 0 };
	tl.addEventListener('pointermove', () => {
		if (window.pv.armed) {
			window.pv.armed = false;
			window.pv.t0 = performance.now();
		}
	}, { capture: true });
	document.addEventListener('load', (e) => {
		if (e.target.matches && e.target.matches('.tl-preview img'))
			window.pv.loads.push({ t: performance.now(), keyframe: +e.target.parentElement.dataset.keyframe, width: e.target.naturalWidth });
	}, true);
	new MutationObserver((ms) => {
		window.pv.trackMutations += ms.length;
	}).observe(tl.querySelector('.tl-track'), { childList: true, subtree: true, attributes: true });
}

// Opens the camera's timeline with the playhead at `at`, zoomed to about 2 minutes around it.
async function open(page, url, camera, at, selector) {
	await page.goto(`${url}/timeline.html?camera=${encodeURIComponent(camera)}&t=${at}`);
	await page.waitForSelector(`${selector} [data-prim=range]`, { timeout: 15000 });
	await page.waitForSelector(`${selector} .tl-handle:not([hidden])`, { timeout: 15000 });
	await page.focus('.tl');
	for (let i = 0; i < 4; i++)
		await page.keyboard.press('+');
	await page.waitForFunction(() => +document.querySelector('.tl').dataset.to - +document.querySelector('.tl').dataset.from < 3 * 60000);
	await page.evaluate(instrument);
	return page.$eval('.tl', (t) => {
		const r = t.getBoundingClientRect();
		return { x: r.left, y: r.top, w: r.width, h: r.height, from: +t.dataset.from, to: +t.dataset.to };
	});
}

// The next load of the preview after arming, and how long after the pointermove it came.
async function armedLoad(page, act) {
	const before = await page.evaluate(() => {
		window.pv.armed = true;
		return window.pv.loads.length;
	});
	await act();
	await page.waitForFunction((n) => window.pv.loads.length > n, before, { timeout: 20000 });
	return page.evaluate((n) => ({ ...window.pv.loads[n], ms: window.pv.loads[n].t - window.pv.t0 }), before);
}

export default async function () {
	const s = await uiSession();
	const cams = await waitStreaming(s.kp, s.token, 1);
	const camera = cams[0].name;
	const { page } = s;
	const auth = { headers: { Authorization: `Bearer ${s.token}` } };
	const range = await waitFor(async () => {
		const now = Date.now();
		const r = await fetch(`${s.kp.url}/api/v1/coverage?camera=${camera}&from=${now - 3600000}&to=${now + 60000}&bucket=3600000`, auth);
		const j = await r.json();
		const main = j.cameras[0].streams.find((x) => x.name === 'main');
		const last = main.ranges[main.ranges.length - 1];
		return last && last[1] - last[0] > 25000 ? last : null;
	}, 60000, `25 s of recording of ${camera} in /api/v1/coverage`);
	const at = range[0] + 12000;
	const a = at + 3000;
	const b = at - 6000;

	// Desktop: the first hover warms recorderd's cache.
	let box = await open(page, s.kp.url, camera, at, '.tl.h');
	const xOf = (ms) => box.x + ((ms - box.from) / (box.to - box.from)) * box.w;
	const slack = (2 * (box.to - box.from)) / box.w; // a pixel's rounding, twice
	const y = box.y + 66;
	const requests = { now: 0, max: 0, total: 0 };
	const isPreview = (r) => r.url().includes('/thumbnail?t=');
	page.on('request', (r) => {
		if (isPreview(r)) {
			requests.total++;
			requests.max = Math.max(requests.max, ++requests.now);
		}
	});
	const done = (r) => {
		if (isPreview(r))
			requests.now--;
	};
	page.on('requestfinished', done);
	page.on('requestfailed', done);
	const cold = await armedLoad(page, () => page.mouse.move(xOf(a), y));
	check(cold.width === 320 && cold.keyframe <= a + slack && cold.keyframe > a - 10000, `hovering shows the keyframe at or before the time, 320 px wide (cold: ${cold.ms.toFixed(0)} ms, keyframe ${cold.keyframe} for ${a}, ${cold.width} px)`);
	check(await page.isVisible('.tl-preview'), 'the preview is visible');
	await page.mouse.move(box.x + box.w / 2, box.y - 40);
	await page.waitForSelector('.tl-preview', { state: 'hidden' });
	check(true, 'leaving the timeline hides the preview');

	// Warm: a fresh page (nothing in its memory), recorderd's cache warm.
	box = await open(page, s.kp.url, camera, at, '.tl.h');
	const warm = await armedLoad(page, () => page.mouse.move(xOf(a), y));
	console.log(`hover -> preview loaded: cold ${cold.ms.toFixed(1)} ms, warm ${warm.ms.toFixed(1)} ms`);
	check(warm.keyframe === cold.keyframe && warm.width === 320, `on a warm cache a fresh page shows the same keyframe (${warm.ms.toFixed(1)} ms)`);
	await shoot(page, 'timeline-preview-desktop');

	// Elsewhere and back: back is from the page's memory, not asked again.
	const other = await armedLoad(page, () => page.mouse.move(xOf(b), y));
	check(other.keyframe <= b + slack && other.keyframe !== warm.keyframe, 'another GOP shows its own keyframe');
	const asked = requests.total;
	const back = await armedLoad(page, () => page.mouse.move(xOf(a), y));
	check(back.keyframe === warm.keyframe && requests.total === asked, `hovering a GOP already fetched asks nothing (${back.ms.toFixed(1)} ms)`);
	await page.mouse.move(xOf(a) + 1, y);
	await page.mouse.move(xOf(a) + 2, y);
	await page.waitForTimeout(300);
	check(requests.total === asked, 'moving inside the same GOP asks nothing');

	// A fast sweep over the whole recorded range: bounded requests and DOM, no drawing.
	await page.mouse.move(xOf(range[0] + 1000), y);
	await page.mouse.move(xOf(range[1] - 3000), y, { steps: 60 });
	await page.waitForTimeout(1500);
	const after = await page.evaluate(() => ({ previews: document.querySelectorAll('.tl-preview').length, imgs: document.querySelectorAll('.tl-preview img').length, mutations: window.pv.trackMutations }));
	console.log(`sweep: ${requests.total - asked} requests, at most ${requests.max} in flight`);
	check(requests.max <= 2, `at most 2 preview requests in flight (${requests.max})`);
	check(after.previews === 1 && after.imgs === 1, 'one preview element, reused');
	check(after.mutations === 0, `hovering draws nothing of the timeline again (${after.mutations} track mutations)`);
	s.guard.assertClean('the timeline preview (desktop)');

	// Phone: a finger drags the playhead; the preview follows it, and hides at release.
	const m = await s.mobile();
	const cdp = await m.page.context().newCDPSession(m.page);
	await cdp.send('Emulation.setTouchEmulationEnabled', { enabled: true, maxTouchPoints: 2 });
	const drag = async (mbox, to) => {
		const h = await m.page.$eval('.tl-handle', (e) => { const r = e.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
		const ty = mbox.y + ((to - mbox.from) / (mbox.to - mbox.from)) * mbox.h;
		await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x: h.x, y: h.y }] });
		await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x: h.x, y: ty }] });
	};
	const release = () => cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
	let mbox = await open(m.page, s.kp.url, camera, at, '.tl.v');
	const mcold = await armedLoad(m.page, () => drag(mbox, b));
	check(mcold.width === 320 && mcold.keyframe <= b + 2000, `dragging the playhead with a finger shows the preview (cold: ${mcold.ms.toFixed(0)} ms)`);
	await shoot(m.page, 'timeline-preview-mobile');
	await release();
	await m.page.waitForSelector('.tl-preview', { state: 'hidden' });
	check(true, 'lifting the finger hides the preview');
	mbox = await open(m.page, s.kp.url, camera, at, '.tl.v');
	const mwarm = await armedLoad(m.page, () => drag(mbox, b));
	await release();
	console.log(`touch drag -> preview loaded: cold ${mcold.ms.toFixed(1)} ms, warm ${mwarm.ms.toFixed(1)} ms`);
	check(mwarm.keyframe === mcold.keyframe && mwarm.width === 320, `on a phone, warm, the same keyframe again (${mwarm.ms.toFixed(1)} ms)`);
	m.guard.assertClean('the timeline preview (phone)');
}
