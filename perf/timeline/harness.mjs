// In-page part of the timeline benchmark: mounts the production component
// (www/js/timeline.js) with the fixture, dispatches each timed input event in the page
// and measures from the dispatch to the second animation frame after the expected DOM
// state appears, records long tasks, and mounts the naive baseline (every primitive of
// the day, drawn again on every view change) for the same interactions.
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

// The pointer id of the last real pointerdown (the CDP mouse), so that the moves
// dispatched in the page belong to the press that Playwright made.
let pointerId = 1;
window.addEventListener('pointerdown', (e) => {
	if (e.isTrusted)
		pointerId = e.pointerId;
}, { capture: true });

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

// The next change under the timeline (or 50 ms), so that a change made later than
// the input's own task is seen in the task that made it, not one polling frame later.
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

// One input event built in the page and dispatched synchronously at the element under
// (x, y), or at the element holding the pointer capture, as Chromium would target it.
function dispatch(a) {
	if (a.type === 'click') {
		document.querySelector(a.selector).click();
		return;
	}
	const at = root.hasPointerCapture(pointerId) ? root : document.elementFromPoint(a.x, a.y);
	const common = { bubbles: true, cancelable: true, composed: true, clientX: a.x, clientY: a.y, view: window };
	if (a.type === 'wheel') {
		at.dispatchEvent(new WheelEvent('wheel', { ...common, deltaX: a.dx || 0, deltaY: a.dy || 0, deltaMode: 0 }));
	} else {
		for (const type of a.type.split('+'))
			at.dispatchEvent(new PointerEvent(type, { ...common, pointerId, pointerType: 'mouse', isPrimary: true, button: type === 'pointermove' ? -1 : 0, buttons: type === 'pointerup' ? 0 : 1 }));
	}
}

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

// One interaction sample (METHODOLOGY.md, "timeline"): at a phase of the frame set by
// `phase` (ms after a frame's start), dispatch `action` in the page; the latency runs
// from just before the dispatch to the second animation frame after the DOM state of
// `kind` is seen (at once if the handler drew it, else at the mutation that drew it).
export async function interact(kind, action, phase = 0) {
	await frame();
	if (phase > 0)
		await sleep(phase);
	const before = state();
	const t0 = performance.now();
	dispatch(action);
	for (;;) {
		if (changed(kind, before, state()))
			break;
		if (performance.now() - t0 > 2000)
			throw new Error(`no ${kind} change within 2 s of dispatching ${JSON.stringify(action)}`);
		await mutation();
	}
	const seen = performance.now() - t0;
	await twoFrames();
	return { ms: performance.now() - t0, seen, after: state() };
}

// After a gesture has rested (the component draws again 150 ms later): whether the
// track was drawn exactly for the view (no transform left) and how often it was drawn.
export async function settled() {
	await sleep(300);
	const track = root.querySelector('.tl-track');
	return { transform: track.style.transform, renders: tl.stats.renders, view: tl.view, from: +root.dataset.from, to: +root.dataset.to };
}

// The frame interval of this page: median rAF delta over 30 frames.
export async function frameInterval() {
	const ts = [];
	for (let i = 0; i < 31; i++)
		ts.push(await frame());
	const d = ts.slice(1).map((t, i) => t - ts[i]).sort((x, y) => x - y);
	return d[d.length >> 1];
}

export function longTaskStats() {
	return { count: longTasks.length, durations: longTasks.slice() };
}

export function peakDescendants() {
	descendants();
	return peak;
}

// Baseline: the same day drawn naively, one element per segment, per event and per
// hour tick, no windowing, no clustering, every primitive drawn again on every view
// change. It has the component's interface as far as the benchmark uses it, and the
// same wheel zoom and drag pan, so that its interactions are measured like the
// component's.
function createNaive(box) {
	const vertical = orientation === 'vertical';
	box.className = `tl ${vertical ? 'v' : 'h'}`;
	const track = document.createElement('div');
	track.className = 'tl-track';
	const handle = document.createElement('div');
	handle.className = 'tl-handle';
	handle.hidden = true;
	box.replaceChildren(track, handle);
	const size = (vertical ? box.clientHeight : box.clientWidth) || 1;
	const side = vertical ? 'top' : 'left';
	const len = vertical ? 'height' : 'width';
	let from = day;
	let to = day + fx.DAY;
	const pos = (t) => ((t - from) / (to - from)) * size;
	const axis = (e) => {
		const r = box.getBoundingClientRect();
		return vertical ? e.clientY - r.top : e.clientX - r.left;
	};
	function render() {
		const frag = document.createDocumentFragment();
		for (let h = 0; h <= 24; h++) {
			const e = document.createElement('div');
			e.className = 'tl-tick';
			e.dataset.prim = 'tick';
			e.textContent = `${h}:00`;
			e.style[side] = `${pos(day + h * 3600000)}px`;
			frag.append(e);
		}
		for (const s of data.segments) {
			const e = document.createElement('div');
			e.className = 'tl-range';
			e.dataset.prim = 'range';
			e.style[side] = `${pos(s[0])}px`;
			e.style[len] = `${Math.max(1, pos(s[1]) - pos(s[0]))}px`;
			frag.append(e);
		}
		for (const ev of data.events) {
			const e = document.createElement('button');
			e.className = 'tl-ev';
			e.dataset.prim = 'event';
			e.dataset.label = ev.label;
			e.style[side] = `${pos(ev.start)}px`;
			frag.append(e);
		}
		track.replaceChildren(frag);
		box.dataset.from = String(Math.round(from));
		box.dataset.to = String(Math.round(to));
	}
	function setView(f, t) {
		const span = Math.min(Math.max(t - f, 60000), fx.DAY);
		from = Math.min(Math.max(f, day), day + fx.DAY - span);
		to = from + span;
		render();
	}
	box.addEventListener('wheel', (e) => {
		e.preventDefault();
		const a = from + (axis(e) / size) * (to - from);
		const span = (to - from) * Math.exp(e.deltaY * 0.0015);
		const r = (a - from) / (to - from);
		setView(a - r * span, a - r * span + span);
	}, { passive: false });
	let press = null;
	box.addEventListener('pointerdown', (e) => {
		box.setPointerCapture(e.pointerId);
		press = { start: axis(e), from, to, moved: false };
	});
	box.addEventListener('pointermove', (e) => {
		if (!press || (!press.moved && Math.abs(axis(e) - press.start) < 4))
			return;
		press.moved = true;
		const d = ((press.start - axis(e)) / size) * (press.to - press.from);
		setView(press.from + d, press.to + d);
	});
	for (const t of ['pointerup', 'pointercancel'])
		box.addEventListener(t, () => {
			press = null;
		});
	return {
		setView,
		render,
		get view() {
			return { from, to };
		},
		playhead: null,
		stats: { eventsInWindow: data.events.length },
		primitiveCount: () => track.childElementCount,
		destroy() {
			box.replaceChildren();
		},
	};
}

// Mounts the naive baseline in place of the component (the interactions then run on it).
export async function mountNaive() {
	if (tl)
		tl.destroy();
	root = document.createElement('div');
	host().replaceChildren(root);
	await twoFrames();
	tl = createNaive(root);
	tl.render();
	await twoFrames();
	return { prims: tl.primitiveCount(), descendants: root.getElementsByTagName('*').length };
}

// The naive initial render: from an empty box to the second frame after all is drawn.
export async function naive() {
	if (tl)
		tl.destroy();
	tl = null;
	root = document.createElement('div');
	host().replaceChildren(root);
	await twoFrames();
	const t0 = performance.now();
	const n = createNaive(root);
	n.render();
	await twoFrames();
	const ms = performance.now() - t0;
	const r = { ms, prims: n.primitiveCount(), descendants: root.getElementsByTagName('*').length };
	n.destroy();
	return r;
}
