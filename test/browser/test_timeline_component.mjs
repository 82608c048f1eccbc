// Component test of www/js/timeline.js (the production module, served over HTTP): with
// the 600 fixture events plus 1,200 events outside the window the rendered primitives
// are exactly those of the 600 alone and fewer than 800, horizontal and vertical, for
// the whole day and zoomed in; filtering and clustering see only the window.
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
		g.assertClean(`the ${orientation} component page`);
		await page.close();
	}
}
