// Component test of www/js/timeline.js (the production module, served over HTTP): with
// the 600 fixture events plus 1,200 events outside the window the rendered primitives
// are exactly those of the 600 alone and fewer than 800, horizontal and vertical, for
// the whole day and zoomed in; filtering and clustering see only the window; a wheel
// zoom and a drag pan move and scale the drawn track, then draw it exactly; buttons zoom
// around the playhead or the newest recording; a dragged playhead seeks where dropped.
import { launch, staticServer, guard, check, DESKTOP, MOBILE } from './helpers.mjs';

async function counts(page, orientation, extra, view) {
	return page.evaluate(async ({ orientation, extra, view }) => {
		const { createTimeline } = await import('/js/timeline.js');
		const fx = await import('/fixture/fixture_timeline.mjs');
		const day = fx.dayStart();
		let evs = fx.events(day);
		if (extra === 'outside-day')
			evs = evs.concat(fx.eventsIn(day - fx.DAY, day, 600, 1), fx.eventsIn(day + fx.DAY, day + 2 * fx.DAY, 600, 2));
		const root = document.createElement('div');
		document.getElementById('app').replaceChildren(root);
		const tl = createTimeline(root, { orientation, dayStart: day, dayEnd: day + fx.DAY });
		if (view) {
			const from = day + view[0] * 3600000;
			const to = day + view[1] * 3600000;
			if (extra === 'outside-window') {
				// 1,200 more events inside the day but outside [from - span, to + span)
				const span = to - from;
				evs = evs.concat(fx.eventsIn(day, from - span - 60000, 600, 3), fx.eventsIn(to + span, day + fx.DAY, 600, 4));
			}
			tl.setView(from, to);
		}
		tl.setData({ segments: fx.segments(day), events: evs });
		tl.render();
		const prims = root.querySelectorAll('[data-prim]');
		const kinds = {};
		for (const p of prims)
			kinds[p.dataset.prim] = (kinds[p.dataset.prim] || 0) + 1;
		const size = orientation === 'vertical' ? root.clientHeight : root.clientWidth;
		let outside = 0;
		for (const p of prims) {
			const a = parseFloat(orientation === 'vertical' ? p.style.top : p.style.left);
			if (a < -size - 1 || a > 2 * size + 1)
				outside++;
		}
		const r = { total: prims.length, kinds, stats: tl.stats, outside, events: evs.length, size };
		tl.destroy();
		return r;
	}, { orientation, extra, view });
}

// A wheel zoom in and a drag pan, each dispatched in the page: the view is shown in the
// handler by moving and scaling the drawn track (no drawing), markers keep their size,
// and 150 ms after the gesture rests the track is drawn exactly, with the recording
// ranges where the moved and scaled track had shown them.
async function gestures(page, orientation) {
	return page.evaluate(async (orientation) => {
		const { createTimeline } = await import('/js/timeline.js');
		const fx = await import('/fixture/fixture_timeline.mjs');
		const day = fx.dayStart();
		const root = document.createElement('div');
		document.getElementById('app').replaceChildren(root);
		const tl = createTimeline(root, { orientation, dayStart: day, dayEnd: day + fx.DAY });
		// The fixture's gaps recur every 10 minutes; a few missing minutes make the ranges'
		// starts irregular, so that a track moved by a wrong multiple of 10 minutes shows.
		const missing = new Set([553, 587, 611, 640, 702, 731, 778, 845, 871]);
		tl.setData({ segments: fx.segments(day).filter((_, i) => !missing.has(i)), events: fx.events(day) });
		tl.setView(day + 6 * 3600000, day + 18 * 3600000);
		tl.render();
		const v = orientation === 'vertical';
		const box = root.getBoundingClientRect();
		const lo = v ? box.top : box.left;
		const hi = v ? box.bottom : box.right;
		const frame = () => new Promise((ok) => requestAnimationFrame(ok));
		const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));
		const track = root.querySelector('.tl-track');
		// Where the person sees each recording range begin, inside the view.
		const starts = () => [...root.querySelectorAll('.tl-range')].map((e) => e.getBoundingClientRect()).map((r) => (v ? r.top : r.left)).filter((p) => p > lo + 3 && p < hi - 3).sort((a, b) => a - b);
		// How far each marker's drawn size along the axis is from its laid-out size.
		const markerSize = () => [...root.querySelectorAll('.tl-ev, .tl-cluster')].map((e) => {
			const r = e.getBoundingClientRect();
			return v ? r.height - e.offsetHeight : r.width - e.offsetWidth;
		});
		const x = box.left + box.width / 2;
		const y = v ? box.top + box.height / 2 : box.top + 40;
		const out = [];
		async function step(name, fire) {
			await frame();
			const before = { renders: tl.stats.renders, prims: tl.primitiveCount() };
			fire();
			const now = { view: tl.view, from: +root.dataset.from, to: +root.dataset.to, transform: track.style.transform, renders: tl.stats.renders, prims: tl.primitiveCount() };
			await frame();
			const shown = { starts: starts(), markers: markerSize() };
			await sleep(300);
			const exact = { starts: starts(), markers: markerSize(), transform: track.style.transform, renders: tl.stats.renders };
			out.push({ name, before, now, shown, exact });
		}
		const at = (p) => document.elementFromPoint(...(v ? [x, p] : [p, y]));
		const mid = v ? y : x;
		await step('wheel zoom in', () => at(mid).dispatchEvent(new WheelEvent('wheel', { bubbles: true, cancelable: true, clientX: x, clientY: y, deltaY: -462 })));
		await step('drag pan', () => {
			const pe = (type, p) => new PointerEvent(type, { bubbles: true, cancelable: true, pointerId: 1, pointerType: 'mouse', isPrimary: true, button: type === 'pointermove' ? -1 : 0, buttons: type === 'pointerup' ? 0 : 1, clientX: v ? x : p, clientY: v ? p : y });
			at(mid).dispatchEvent(pe('pointerdown', mid));
			root.dispatchEvent(pe('pointermove', mid + 90));
			root.dispatchEvent(pe('pointerup', mid + 90));
		});
		tl.destroy();
		return out;
	}, orientation);
}

// Buttons and keys zoom around what the person looks at, and a dragged playhead seeks
// where it is dropped even when a playback state arrives during the drag (states describe
// the old position).
async function placing(page, orientation) {
	return page.evaluate(async (orientation) => {
		const { createTimeline } = await import('/js/timeline.js');
		const fx = await import('/fixture/fixture_timeline.mjs');
		const day = fx.dayStart();
		const H = 3600000;
		const root = document.createElement('div');
		document.getElementById('app').replaceChildren(root);
		const seeks = [];
		const tl = createTimeline(root, { orientation, dayStart: day, dayEnd: day + fx.DAY, onSeek: (ms) => seeks.push(ms) });
		// Recorded until 20:00 only ("now" on today's page), no playhead: the whole day
		// zoomed in keeps 20:00 in view (the middle would show 06:00-18:00).
		tl.setData({ segments: fx.segments(day).filter((r) => r[1] <= day + 20 * H), events: [] });
		tl.render();
		tl.zoom(0.5);
		const zoomed = tl.view;
		// A playhead at 10:00 in a 08:00-12:00 view: zoom keeps it where it is.
		tl.setView(day + 8 * H, day + 12 * H);
		tl.setPlayhead(day + 10 * H);
		tl.zoom(0.5);
		const aroundPlayhead = tl.view;
		// Drag the handle to 3/4 of the view; a state at 10:00:01 arrives before release.
		const v = orientation === 'vertical';
		const handle = root.querySelector('.tl-handle');
		const hb = handle.getBoundingClientRect();
		const box = root.getBoundingClientRect();
		const view = tl.view;
		const to = v ? box.top + box.height * 0.75 : box.left + box.width * 0.75;
		const cx = hb.left + hb.width / 2;
		const cy = hb.top + hb.height / 2;
		const pe = (type, p) => new PointerEvent(type, { bubbles: true, cancelable: true, pointerId: 1, pointerType: 'mouse', isPrimary: true, button: type === 'pointermove' ? -1 : 0, buttons: type === 'pointerup' ? 0 : 1, clientX: v ? cx : p, clientY: v ? p : cy });
		handle.dispatchEvent(pe('pointerdown', v ? cy : cx));
		root.dispatchEvent(pe('pointermove', to));
		tl.setPlayhead(day + 10 * H + 1000);
		root.dispatchEvent(pe('pointerup', to));
		const want = view.from + ((to - (v ? box.top : box.left)) / (v ? box.height : box.width)) * (view.to - view.from);
		tl.destroy();
		return { day, zoomed, aroundPlayhead, seeks, want, msPerPx: (view.to - view.from) / (v ? box.height : box.width) };
	}, orientation);
}

export default async function () {
	const browser = await launch();
	const base = await staticServer();
	for (const [orientation, vp] of [['horizontal', DESKTOP], ['vertical', MOBILE]]) {
		const page = await browser.newPage(vp);
		const g = guard(page, `timeline ${orientation}`);
		await page.goto(base + '/__blank');
		if (orientation === 'vertical')
			await page.addStyleTag({ content: '#app{height:800px}' });

		const a = await counts(page, orientation, null, null);
		const b = await counts(page, orientation, 'outside-day', null);
		check(b.events === 1800, `${orientation}: 600 fixture events + 1,200 outside the day given (${b.events})`);
		check(a.stats.eventsInWindow === 600, `${orientation} whole day: all 600 events considered (${a.stats.eventsInWindow})`);
		check(b.stats.eventsInWindow === 600, `${orientation} whole day: the 1,200 outside events are not even considered (${b.stats.eventsInWindow})`);
		check(a.total === b.total && JSON.stringify(a.kinds) === JSON.stringify(b.kinds), `${orientation} whole day: same primitives with and without the outside events (${a.total} vs ${b.total}: ${JSON.stringify(b.kinds)})`);
		check(b.total < 800, `${orientation} whole day: ${b.total} primitives < 800`);
		check(a.kinds.range > 100 && a.kinds.tick > 5 && (a.kinds.event || 0) + (a.kinds.cluster || 0) > 20, `${orientation} whole day: ranges, ticks and markers rendered (${JSON.stringify(a.kinds)})`);

		const view = [12, 13];
		const c = await counts(page, orientation, null, view);
		const d = await counts(page, orientation, 'outside-window', view);
		check(d.events - c.events === 1200, `${orientation} zoomed 12:00-13:00: 1,200 more events outside the rendered window (${d.events} vs ${c.events})`);
		check(c.total === d.total && JSON.stringify(c.kinds) === JSON.stringify(d.kinds), `${orientation} zoomed: same primitives (${c.total} vs ${d.total}: ${JSON.stringify(d.kinds)})`);
		check(d.total < 800 && d.outside === 0, `${orientation} zoomed: ${d.total} primitives < 800, none beyond one viewport of overscan`);
		check(d.stats.eventsInWindow === c.stats.eventsInWindow && c.stats.eventsInWindow > 0, `${orientation} zoomed: clustering saw only the window's ${d.stats.eventsInWindow} events`);

		for (const st of await gestures(page, orientation)) {
			const n = `${orientation} ${st.name}`;
			check(st.now.from === Math.round(st.now.view.from) && st.now.to === Math.round(st.now.view.to) && st.now.view.from !== undefined, `${n}: the view is shown in the handler (data-from/to ${st.now.from}-${st.now.to})`);
			check(st.now.transform !== '' && st.now.renders === st.before.renders && st.now.prims === st.before.prims, `${n}: by moving and scaling the drawn track, not drawing (transform '${st.now.transform}', draws ${st.before.renders} → ${st.now.renders})`);
			const stretch = Math.max(...st.shown.markers.map(Math.abs));
			check(st.shown.markers.length > 0 && stretch < 0.5, `${n}: ${st.shown.markers.length} markers keep their size while moved and scaled (largest stretch ${stretch.toFixed(2)} px)`);
			check(st.exact.transform === '' && st.exact.renders === st.before.renders + 1, `${n}: drawn exactly once 150 ms after the gesture (transform '${st.exact.transform}', draws ${st.before.renders} → ${st.exact.renders})`);
			const off = st.exact.starts.length === st.shown.starts.length ? Math.max(...st.exact.starts.map((p, i) => Math.abs(p - st.shown.starts[i]))) : Infinity;
			check(st.shown.starts.length > 3 && off < 1, `${n}: ${st.shown.starts.length} recording ranges begin where the moved track showed them (largest difference ${off.toFixed(2)} px)`);
		}
		const pl = await placing(page, orientation);
		const H = 3600000;
		check(pl.zoomed.to - pl.zoomed.from === 12 * H && pl.zoomed.from <= pl.day + 20 * H && pl.zoomed.to >= pl.day + 20 * H, `${orientation}: zoom in without a playhead keeps the newest recording (20:00) in view (${(pl.zoomed.from - pl.day) / H}-${(pl.zoomed.to - pl.day) / H} h)`);
		check(pl.aroundPlayhead.from === pl.day + 9 * H && pl.aroundPlayhead.to === pl.day + 11 * H, `${orientation}: zoom in keeps the playhead where it is (${(pl.aroundPlayhead.from - pl.day) / H}-${(pl.aroundPlayhead.to - pl.day) / H} h)`);
		check(pl.seeks.length === 1 && Math.abs(pl.seeks[0] - pl.want) <= 2 * pl.msPerPx, `${orientation}: a state arriving during a playhead drag does not move it: the seek goes where it was dropped (${pl.seeks.map((x) => x - pl.day)} for ${pl.want - pl.day})`);
		g.assertClean(`the ${orientation} component page`);
		await page.close();
	}
}
