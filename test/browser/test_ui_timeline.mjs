// Timeline page against the real supervisor: recorded ranges and published events
// appear, zoom (button, wheel), pan (drag), click to seek into stored playback with the
// playhead following the server's state messages and the video playing, playhead drag;
// vertical on a phone. Screenshots desktop and mobile.
import { check, shoot, waitFor, waitStreaming, publishEvent } from './helpers.mjs';
import { uiSession } from './session.mjs';

const view = (page) => page.$eval('.tl', (t) => ({ from: +t.dataset.from, to: +t.dataset.to }));

export default async function () {
	const s = await uiSession();
	const cams = await waitStreaming(s.kp, s.token, 1);
	const camera = cams[0].name;
	const { page } = s;
	const auth = { headers: { Authorization: `Bearer ${s.token}` } };
	const day = new Date();
	day.setHours(0, 0, 0, 0);
	const from = day.getTime();
	// Some recording first (the catalog indexes fragments as they are committed).
	await waitFor(async () => {
		const r = await fetch(`${s.kp.url}/api/v1/coverage?camera=${camera}&from=${from}&to=${from + 86400000}&bucket=3600000`, auth);
		const j = await r.json();
		const main = j.cameras[0].streams.find((x) => x.name === 'main');
		return main.ranges.length && main.ranges[main.ranges.length - 1][1] - main.ranges[0][0] > 8000;
	}, 40000, `8 s of recording of ${camera} in /api/v1/coverage`);
	const now = Date.now();
	await page.goto(s.kp.url + '/');
	for (let i = 0; i < 4; i++)
		await publishEvent(s.kp, s.token, page, { id: `tl-${i}`, revision: 1, camera, stream: 'main', start_ms: now - 8000 + i * 1500, end_ms: now - 7000 + i * 1500, labels: [{ name: i % 2 ? 'vehicle' : 'person', score: 0.9 }] });

	await page.goto(`${s.kp.url}/timeline.html?camera=${encodeURIComponent(camera)}`);
	await page.waitForSelector('.tl [data-prim=range]', { timeout: 15000 });
	await page.waitForSelector('.tl [data-prim=event], .tl [data-prim=cluster]', { timeout: 15000 });
	check(true, 'recorded ranges and event markers are drawn');
	// The demo camera's own detections may add theirs (people): ours must be listed.
	const types = await page.$$eval('.tl-filters input', (is) => is.map((i) => i.value));
	check(types.includes('person') && types.includes('vehicle'), `event-type filters list person and vehicle (${types.join(', ')})`);

	let v0 = await view(page);
	check(v0.to - v0.from === 86400000, 'the whole day is shown first');
	await page.click('button[aria-label="Zoom in"]');
	await page.waitForFunction((span) => +document.querySelector('.tl').dataset.to - +document.querySelector('.tl').dataset.from < span, v0.to - v0.from);
	let v1 = await view(page);
	check(Math.abs((v1.to - v1.from) - (v0.to - v0.from) / 2) < 1000, 'Zoom in halves the span');
	check(v1.from <= now && v1.to >= now, `Zoom in keeps the newest recording in view (${new Date(v1.from).toISOString()} to ${new Date(v1.to).toISOString()})`);

	// Wheel-zoom into the newest recording until the view is under 10 minutes.
	const box = await page.$eval('.tl', (t) => { const r = t.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
	let stuck = false;
	for (let i = 0; i < 24; i++) {
		const v = await view(page);
		if (v.to - v.from < 10 * 60000)
			break;
		const x = box.x + ((now - v.from) / (v.to - v.from)) * box.w;
		if (!stuck && (x < box.x + box.w * 0.1 || x > box.x + box.w * 0.9)) {
			// Now is at an edge or beyond (the halved day ends at noon or midnight, and the
			// test may run just before either): a zoom anchored beside it would push it out,
			// so first pan it towards the middle with shift+wheel. At the end of the day the
			// view cannot move further: then zoom anchored on now itself.
			await page.mouse.move(box.x + box.w / 2, box.y + 40);
			await page.keyboard.down('Shift');
			await page.mouse.wheel(0, x - (box.x + box.w / 2));
			await page.keyboard.up('Shift');
			await page.waitForTimeout(60);
			const moved = await view(page);
			stuck = moved.from === v.from && moved.to === v.to;
			continue;
		}
		stuck = false;
		await page.mouse.move(Math.min(Math.max(x, box.x + 1), box.x + box.w - 1), box.y + 40);
		await page.mouse.wheel(0, -400);
		await page.waitForTimeout(60);
	}
	v1 = await view(page);
	check(v1.to - v1.from < 10 * 60000 && v1.from <= now && v1.to >= now, `wheel zoom reaches a ${Math.round((v1.to - v1.from) / 1000)} s window around now`);

	// Pan by dragging 200 px to the right: the view moves earlier.
	await page.mouse.move(box.x + box.w / 2, box.y + 30);
	await page.mouse.down();
	await page.mouse.move(box.x + box.w / 2 + 100, box.y + 30, { steps: 5 });
	await page.mouse.move(box.x + box.w / 2 + 200, box.y + 30, { steps: 5 });
	await page.mouse.up();
	const v2 = await view(page);
	const expect = (200 / box.w) * (v1.to - v1.from);
	check(Math.abs((v1.from - v2.from) - expect) < expect * 0.1 + 1000, `drag pans by ${Math.round((v1.from - v2.from) / 1000)} s (expected ${Math.round(expect / 1000)} s)`);
	// And back, so that now (and the newest recording, which reaches it) is in view again
	// wherever the wheel zoom left it in the window.
	await page.mouse.move(box.x + box.w / 2 + 200, box.y + 30);
	await page.mouse.down();
	await page.mouse.move(box.x + box.w / 2 + 100, box.y + 30, { steps: 5 });
	await page.mouse.move(box.x + box.w / 2, box.y + 30, { steps: 5 });
	await page.mouse.up();
	const v3 = await view(page);
	check(Math.abs(v3.from - v1.from) < expect * 0.1 + 1000 && v3.from <= now && v3.to >= now, 'dragging back returns to the view around now');
	check(!(await page.$('.tl-handle:not([hidden])')), 'a drag does not seek');

	await shoot(page, 'timeline-desktop');
	const m = await s.mobile();
	await m.page.goto(`${s.kp.url}/timeline.html?camera=${encodeURIComponent(camera)}`);
	await m.page.waitForSelector('.tl.v [data-prim=range]', { timeout: 15000 });
	check(!(await m.page.isVisible('.tl-filters')), 'vertical timeline on a phone, without filters');
	await shoot(m.page, 'timeline-mobile');
	m.guard.assertClean('the mobile timeline page');

	// Click in the middle of the newest recorded range's visible part: stored playback
	// starts there. (How much of it is in view after the zoom and the pan depends on how
	// long the demo has recorded, so the middle of the whole range may lie off the strip.)
	const target = await page.$$eval('.tl [data-prim=range]', (rs) => {
		const t = document.querySelector('.tl').getBoundingClientRect();
		for (let i = rs.length - 1; i >= 0; i--) {
			const r = rs[i].getBoundingClientRect();
			const left = Math.max(r.left, t.left + 2), right = Math.min(r.right, t.right - 2);
			if (right - left >= 2)
				return { x: (left + right) / 2, y: r.top + r.height / 2 };
		}
		return null;
	});
	check(target, 'a recorded range is in view to click');
	await page.evaluate(() => {
		const t = document.querySelector('.tl');
		window.seekSeen = null;
		new MutationObserver(() => {
			if (t.classList.contains('tl-seeking') && !window.seekSeen)
				window.seekSeen = +document.querySelector('.tl-handle').getAttribute('aria-valuenow');
		}).observe(t, { attributes: true, subtree: true });
	});
	await page.mouse.click(target.x, target.y);
	const seekAt = await page.evaluate(() => window.seekSeen);
	const vs = await view(page);
	const wantAt = vs.from + ((target.x - box.x) / box.w) * (vs.to - vs.from);
	check(seekAt && Math.abs(seekAt - wantAt) < 2000, 'the playhead jumps at once to the click and shows it is seeking');
	await page.waitForFunction(() => !document.querySelector('.tl').classList.contains('tl-seeking'), null, { timeout: 20000 });
	check(true, 'a playback state message arrived (seeking ended)');
	await waitFor(() => page.evaluate(() => { const x = document.querySelector('.player video'); return x.readyState >= 2 && x.videoWidth > 0 && x.currentTime > 0; }), 20000, 'the stored recording plays in the player');
	const p1 = +(await page.getAttribute('.tl-handle', 'aria-valuenow'));
	await page.waitForTimeout(2000);
	const p2 = +(await page.getAttribute('.tl-handle', 'aria-valuenow'));
	check(p2 > p1 && Math.abs(p1 - seekAt) < 15000, `the playhead follows playback (${new Date(p1).toISOString()} -> +${p2 - p1} ms)`);
	await shoot(page, 'timeline-playback-desktop');

	// Drag the playhead 60 px back and release: a seek to where it was dropped.
	const h = await page.$eval('.tl-handle', (e) => { const r = e.getBoundingClientRect(); return { x: r.left + r.width / 2, y: r.top + r.height / 2 }; });
	const vv = await view(page);
	await page.mouse.move(h.x, h.y);
	await page.mouse.down();
	await page.mouse.move(h.x - 30, h.y, { steps: 4 });
	await page.mouse.move(h.x - 60, h.y, { steps: 4 });
	await page.mouse.up();
	const dropped = +(await page.getAttribute('.tl-handle', 'aria-valuenow'));
	const want = vv.from + ((h.x - 60 - box.x) / box.w) * (vv.to - vv.from);
	check(Math.abs(dropped - want) < (vv.to - vv.from) / box.w * 3 + 1500, 'the playhead drags and seeks where it is dropped');
	await page.waitForFunction(() => !document.querySelector('.tl').classList.contains('tl-seeking'), null, { timeout: 20000 });

	// Keyboard: Home shows the day, + zooms in, arrows pan.
	await page.focus('.tl');
	await page.keyboard.press('Home');
	let k = await view(page);
	check(k.to - k.from === 86400000, 'Home shows the whole day');
	await page.keyboard.press('+');
	await page.keyboard.press('ArrowRight');
	k = await view(page);
	check(k.to - k.from === 43200000 && k.from > from, `+ zooms in and ArrowRight pans (${new Date(k.from).toISOString()})`);

	// Filters: unchecking every type removes every marker.
	for (const b of await page.$$('.tl-filters input'))
		await b.uncheck();
	await page.waitForFunction(() => !document.querySelector('.tl [data-prim=event], .tl [data-prim=cluster]'));
	check(true, 'event-type filters hide the markers');
	for (const b of await page.$$('.tl-filters input'))
		await b.check();
	s.guard.assertClean('the timeline page');
}
