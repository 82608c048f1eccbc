// In-page part of the timeline benchmark: mounts the production component
// (www/js/timeline.js) with the fixture, arms measurements that start at the input
// event's timestamp and end two animation frames after the expected DOM state appears,
// records long tasks, and renders the naive baseline (every primitive of the day).
import { createTimeline } from '/js/timeline.js';
import * as fx from '/fixture/fixture_timeline.mjs';

const day = fx.dayStart();
const data = { segments: fx.segments(day), events: fx.events(day) };
const longTasks = [];
new PerformanceObserver((list) => {
	for (const e of list.getEntries())
		longTasks.push(e.duration);
}).observe({ type: 'longtask', buffered: true });

let tl = null;
let root = null;
let orientation = 'horizontal';
let peak = 0;
const frame = () => new Promise((ok) => requestAnimationFrame(ok));
const twoFrames = async () => {
	await frame();
	await frame();
};

function host() {
	const app = document.getElementById('app');
	app.style.cssText = orientation === 'vertical' ? 'padding:10px;height:100vh' : 'padding:16px';
	return app;
}

function descendants() {
	const n = root ? root.getElementsByTagName('*').length : 0;
	peak = Math.max(peak, n);
	return n;
}

export function setup(o) {
	orientation = o;
	longTasks.length = 0;
	peak = 0;
}

// Initial render: mount with the complete fixture through the second frame.
export async function mountOnce() {
	if (tl)
		tl.destroy();
	root = document.createElement('div');
	host().replaceChildren(root);
	await twoFrames();
	const t0 = performance.now();
	tl = createTimeline(root, { orientation, dayStart: day, dayEnd: day + fx.DAY, onSeek: () => {} });
	tl.setData(data);
	await twoFrames();
	const ms = performance.now() - t0;
	return { ms, prims: tl.primitiveCount(), stats: tl.stats, descendants: descendants() };
}

// Filter chips like the page's (desktop only).
export function addFilters() {
	const box = document.createElement('div');
	box.className = 'tl-filters';
	for (const l of tl.labels()) {
		const label = document.createElement('label');
		label.className = 'chip';
		const input = document.createElement('input');
		input.type = 'checkbox';
		input.checked = true;
		input.value = l;
		input.addEventListener('change', () => {
			const on = [...box.querySelectorAll('input:checked')].map((i) => i.value);
			tl.setFilter(on);
		});
		label.append(input, l);
		box.append(label);
	}
	root.after(box);
	return tl.labels();
}

export function setView(fromH, toH) {
	tl.setView(day + fromH * 3600000, day + toH * 3600000);
	tl.render();
}

export function setPlayhead(h) {
	tl.setPlayhead(day + h * 3600000);
}

export function rect(sel) {
	const r = (sel ? document.querySelector(sel) : root).getBoundingClientRect();
	return { x: r.left, y: r.top, w: r.width, h: r.height };
}

export function state() {
	const handle = root.querySelector('.tl-handle');
	return {
		view: tl.view,
		playhead: tl.playhead,
		seeking: root.classList.contains('tl-seeking'),
		handle: handle.style.left || handle.style.top,
		prims: tl.primitiveCount(),
		stats: tl.stats,
		descendants: descendants(),
	};
}

// Arms a measurement for the next `type` input event; done() resolves with the
// latency once `kind` of change is visible (plus two frames), or rejects after 2 s.
let armed = null;
export function arm(type, kind) {
	const before = state();
	armed = { ts: null, kind, before };
	const on = (e) => {
		if (armed && armed.ts === null)
			armed.ts = e.timeStamp;
	};
	window.addEventListener(type, on, { capture: true, once: true });
}

function changed(kind, a, b) {
	if (kind === 'view')
		return (a.view.from !== b.view.from || a.view.to !== b.view.to) && +root.dataset.from === Math.round(b.view.from) && +root.dataset.to === Math.round(b.view.to);
	if (kind === 'filter')
		return a.stats.eventsInWindow !== b.stats.eventsInWindow;
	if (kind === 'playhead')
		return a.handle !== b.handle;
	if (kind === 'seek')
		return b.seeking && a.playhead !== b.playhead;
	return false;
}

// The next change under the timeline (or 50 ms), so that the change is seen in the
// task that made it rather than one polling frame later.
function mutation() {
	return new Promise((ok) => {
		const mo = new MutationObserver(() => {
			mo.disconnect();
			clearTimeout(t);
			ok();
		});
		const t = setTimeout(() => {
			mo.disconnect();
			ok();
		}, 50);
		mo.observe(root, { subtree: true, childList: true, attributes: true });
	});
}

export async function done() {
	const a = armed;
	const t0 = performance.now();
	for (;;) {
		const b = state();
		if (a.ts !== null && changed(a.kind, a.before, b))
			break;
		if (performance.now() - t0 > 2000)
			throw new Error(`no ${a.kind} change within 2 s of the input (event seen: ${a.ts !== null})`);
		await mutation();
	}
	await twoFrames();
	armed = null;
	return { ms: performance.now() - a.ts, after: state() };
}

export function longTaskStats() {
	return { count: longTasks.length, durations: longTasks.slice() };
}

export function peakDescendants() {
	descendants();
	return peak;
}

// Baseline: the same day drawn naively, one element per segment, per event and per
// hour tick, no windowing, no clustering.
export async function naive() {
	const box = document.createElement('div');
	box.className = `tl ${orientation === 'vertical' ? 'v' : 'h'}`;
	host().replaceChildren(box);
	await twoFrames();
	const t0 = performance.now();
	const size = orientation === 'vertical' ? box.clientHeight : box.clientWidth;
	const pos = (t) => ((t - day) / fx.DAY) * size;
	const side = orientation === 'vertical' ? 'top' : 'left';
	const len = orientation === 'vertical' ? 'height' : 'width';
	for (let h = 0; h <= 24; h++) {
		const e = document.createElement('div');
		e.className = 'tl-tick';
		e.dataset.prim = 'tick';
		e.textContent = `${h}:00`;
		e.style[side] = `${pos(day + h * 3600000)}px`;
		box.append(e);
	}
	for (const s of data.segments) {
		const e = document.createElement('div');
		e.className = 'tl-range';
		e.dataset.prim = 'range';
		e.style[side] = `${pos(s[0])}px`;
		e.style[len] = `${Math.max(1, pos(s[1]) - pos(s[0]))}px`;
		box.append(e);
	}
	for (const ev of data.events) {
		const e = document.createElement('button');
		e.className = 'tl-ev';
		e.dataset.prim = 'event';
		e.dataset.label = ev.label;
		e.style[side] = `${pos(ev.start)}px`;
		box.append(e);
	}
	await twoFrames();
	const ms = performance.now() - t0;
	const r = { ms, prims: box.querySelectorAll('[data-prim]').length, descendants: box.getElementsByTagName('*').length };
	box.remove();
	return r;
}
