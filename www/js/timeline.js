// The timeline component: one camera's day as recording availability ranges, event
// markers and clusters, ticks and a playhead, horizontal (desktop) or vertical (mobile).
// Rendering is bounded: only the visible window plus one viewport of overscan on each
// side is in the DOM, found by binary search in the sorted data, so events outside that
// window cost nothing; filtering and clustering run on that window only. Interaction:
// wheel / pinch / buttons zoom, drag pans, the playhead handle drags, a click seeks.
// A view change from a gesture that stays inside what was drawn moves and scales the
// drawn track in its input handler (markers and tick labels keep their size through
// --tl-k) and the track is drawn again exactly once the gesture has rested. Hovering a
// recorded range with the mouse, or dragging the playhead (mouse or touch), reports the
// time under it to onHover (the page's preview, timeline-preview.js) without drawing.
import { hm, hms, MIN, HOUR } from './format.js';

const TICK_STEPS = [1000, 5000, 10000, 15000, 30000, MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR];
const CLUSTER_PX = 16;
const DRAG_PX = 4;
const VERTICAL_ESTIMATE_PX = 400;
const SETTLE_MS = 150;
const MAX_SCALE = 4;

// First index i in sorted `a` with key(a[i]) >= v.
function lowerBound(a, v, key) {
	let lo = 0;
	let hi = a.length;
	while (lo < hi) {
		const mid = (lo + hi) >>> 1;
		if (key(a[mid]) < v)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const segEnd = (s) => s[1];
const evStart = (e) => e.start;

export function createTimeline(root, opts) {
	const horizontal = opts.orientation !== 'vertical';
	const dayStart = opts.dayStart;
	const dayEnd = opts.dayEnd;
	const minSpan = opts.minSpan || MIN;
	const noop = () => {};
	const onSeek = opts.onSeek || noop;
	const onOpenEvent = opts.onOpenEvent || noop;
	const onViewChange = opts.onViewChange || noop;
	const onHover = opts.onHover || noop;

	let from = dayStart;
	let to = dayEnd;
	let segs = [];
	let evs = [];
	let maxDur = 0;
	let filter = null;
	let playhead = null;
	let seeking = false;
	let follow = true;
	let size = 0;
	let pending = 0;
	let settle = 0;
	let drawn = null;
	let counterScale = 1;
	let shown = [];
	const stats = { ticks: 0, ranges: 0, markers: 0, clusters: 0, eventsInWindow: 0, renders: 0 };

	root.classList.add('tl', horizontal ? 'h' : 'v');
	root.tabIndex = 0;
	root.setAttribute('role', 'group');
	root.setAttribute('aria-roledescription', 'timeline');
	root.setAttribute('aria-label', opts.label || 'Timeline. Arrow keys pan, plus and minus zoom, Home shows the whole day, N and P go to the next and previous event.');
	const track = document.createElement('div');
	track.className = 'tl-track';
	const line = document.createElement('div');
	line.className = 'tl-playhead';
	const handle = document.createElement('button');
	handle.type = 'button';
	handle.className = 'tl-handle';
	handle.setAttribute('role', 'slider');
	handle.setAttribute('aria-label', 'Playhead');
	handle.setAttribute('aria-valuemin', String(dayStart));
	handle.setAttribute('aria-valuemax', String(dayEnd));
	const tag = document.createElement('div');
	tag.className = 'tl-label';
	root.replaceChildren(track, line, handle, tag);

	function measure() {
		size = horizontal ? root.clientWidth : root.clientHeight;
		if (!size)
			size = horizontal ? 1024 : VERTICAL_ESTIMATE_PX;
	}
	measure();

	const px = (ms) => ((ms - from) / (to - from)) * size;
	const msAt = (p) => from + (p / size) * (to - from);
	const place = (e, a, len) => {
		if (horizontal)
			e.style.cssText = len === undefined ? `left:${a}px` : `left:${a}px;width:${len}px`;
		else
			e.style.cssText = len === undefined ? `top:${a}px` : `top:${a}px;height:${len}px`;
	};

	function prim(tagName, cls, kind) {
		const e = document.createElement(tagName);
		e.className = cls;
		e.dataset.prim = kind;
		return e;
	}

	function renderTicks(frag, rFrom, rTo) {
		const minPx = horizontal ? 90 : 48;
		const step = TICK_STEPS.find((s) => (s / (to - from)) * size >= minPx) || TICK_STEPS[TICK_STEPS.length - 1];
		const offset = new Date(dayStart).getTimezoneOffset() * MIN;
		let t = Math.ceil((rFrom - offset) / step) * step + offset;
		const fmt = step < MIN ? hms : hm;
		for (; t <= rTo; t += step) {
			const e = prim('div', 'tl-tick', 'tick');
			e.textContent = fmt(t);
			place(e, px(t));
			frag.append(e);
			stats.ticks++;
		}
	}

	function renderRanges(frag, rFrom, rTo) {
		let i = lowerBound(segs, rFrom, segEnd);
		while (i < segs.length && segs[i][0] < rTo) {
			const s = Math.max(segs[i][0], rFrom);
			let e = segs[i][1];
			for (i++; i < segs.length && segs[i][0] <= e && segs[i][0] < rTo; i++)
				e = Math.max(e, segs[i][1]);
			e = Math.min(e, rTo);
			const r = prim('div', 'tl-range', 'range');
			const a = px(s);
			place(r, a, Math.max(1, px(e) - a));
			frag.append(r);
			stats.ranges++;
		}
	}

	function flushCluster(frag, c) {
		const k = shown.length;
		shown.push(c);
		const mid = (c.firstPx + c.lastPx) / 2;
		let e;
		if (c.count === 1) {
			const ev = c.first;
			e = prim('button', 'tl-ev', 'event');
			e.dataset.label = ev.label;
			e.setAttribute('aria-label', `${ev.label} at ${hms(ev.start)}`);
			e.title = `${ev.label} · ${hms(ev.start)}`;
			stats.markers++;
		} else {
			e = prim('button', 'tl-cluster', 'cluster');
			e.textContent = c.count > 99 ? '99+' : String(c.count);
			e.setAttribute('aria-label', `${c.count} events from ${hms(c.first.start)} to ${hms(c.lastStart)}; activate to zoom in`);
			e.title = `${c.count} events · ${hm(c.first.start)}–${hm(c.lastStart)}`;
			stats.clusters++;
		}
		e.type = 'button';
		e.tabIndex = -1;
		e.dataset.k = String(k);
		place(e, mid);
		frag.append(e);
	}

	function renderEvents(frag, rFrom, rTo) {
		let i = lowerBound(evs, rFrom - maxDur, evStart);
		let c = null;
		for (; i < evs.length && evs[i].start < rTo; i++) {
			const ev = evs[i];
			if (ev.end < rFrom || (filter && !filter.has(ev.label)))
				continue;
			stats.eventsInWindow++;
			const p = px(Math.max(ev.start, rFrom));
			if (c && p - c.firstPx < CLUSTER_PX) {
				c.count++;
				c.lastPx = p;
				c.lastStart = ev.start;
				continue;
			}
			if (c)
				flushCluster(frag, c);
			c = { first: ev, count: 1, firstPx: p, lastPx: p, lastStart: ev.start };
		}
		if (c)
			flushCluster(frag, c);
	}

	function placePlayhead() {
		const visible = playhead !== null && playhead >= from && playhead <= to;
		for (const e of [line, handle, tag])
			e.hidden = !visible;
		root.classList.toggle('tl-seeking', seeking);
		if (playhead === null)
			return;
		handle.setAttribute('aria-valuenow', String(Math.round(playhead)));
		handle.setAttribute('aria-valuetext', hms(playhead));
		if (!visible)
			return;
		const p = px(playhead);
		for (const e of [line, handle, tag])
			e.style[horizontal ? 'left' : 'top'] = `${p}px`;
		tag.textContent = hms(playhead);
	}

	function render() {
		if (pending) {
			cancelAnimationFrame(pending);
			pending = 0;
		}
		clearTimeout(settle);
		settle = 0;
		const span = to - from;
		const rFrom = Math.max(dayStart, from - span);
		const rTo = Math.min(dayEnd, to + span);
		drawn = { from, span, rFrom, rTo };
		track.style.transform = '';
		setCounterScale(1);
		stats.ticks = stats.ranges = stats.markers = stats.clusters = stats.eventsInWindow = 0;
		stats.renders++;
		shown = [];
		const frag = document.createDocumentFragment();
		renderTicks(frag, rFrom, rTo);
		renderRanges(frag, rFrom, rTo);
		renderEvents(frag, rFrom, rTo);
		track.replaceChildren(frag);
		root.dataset.from = String(Math.round(from));
		root.dataset.to = String(Math.round(to));
		placePlayhead();
	}

	function setCounterScale(k) {
		if (k === counterScale)
			return;
		counterScale = k;
		if (k === 1)
			track.style.removeProperty('--tl-k');
		else
			track.style.setProperty('--tl-k', String(k));
	}

	// Shows [from, to) by moving and scaling what was drawn for `drawn`, or returns false
	// when that drawing does not cover the view or would be stretched more than 4×.
	function transformDrawn() {
		const span = to - from;
		if (!drawn || from < drawn.rFrom || to > drawn.rTo || span * MAX_SCALE < drawn.span || drawn.span * MAX_SCALE < span)
			return false;
		const k = drawn.span / span;
		const shift = ((drawn.from - from) / span) * size;
		track.style.transform = horizontal ? `translate(${shift}px,0) scale(${k},1)` : `translate(0,${shift}px) scale(1,${k})`;
		setCounterScale(1 / k);
		root.dataset.from = String(Math.round(from));
		root.dataset.to = String(Math.round(to));
		placePlayhead();
		clearTimeout(settle);
		settle = setTimeout(render, SETTLE_MS);
		return true;
	}

	function schedule() {
		if (!pending)
			pending = requestAnimationFrame(() => {
				pending = 0;
				render();
			});
	}

	// `gesture`: wheel, drag or pinch, which may only move and scale the drawn track.
	function setView(f, t, gesture = false) {
		let span = Math.min(Math.max(t - f, minSpan), dayEnd - dayStart);
		f = Math.min(Math.max(f, dayStart), dayEnd - span);
		if (f === from && f + span === to)
			return;
		from = f;
		to = f + span;
		// Input arrives once per frame: showing it now saves a frame of feedback latency.
		if (!gesture || !transformDrawn())
			render();
		onViewChange({ from, to });
	}

	// Without an anchor (buttons, keys) a zoom keeps in place what the user is looking at:
	// the playhead when it is in view, else the newest recorded moment in view (on today's
	// day, "now"), else the middle.
	function zoomAnchor() {
		const inView = (ms) => ms !== null && ms >= from && ms <= to;
		if (inView(playhead))
			return playhead;
		const newest = segs.length ? Math.min(segs.reduce((m, r) => Math.max(m, r[1]), from), to) : null;
		return inView(newest) && newest > from ? newest : (from + to) / 2;
	}

	function zoom(factor, anchor, gesture = false) {
		const a = anchor ?? zoomAnchor();
		const span = Math.min(Math.max((to - from) * factor, minSpan), dayEnd - dayStart);
		const r = (a - from) / (to - from);
		setView(a - r * span, a - r * span + span, gesture);
	}

	function pan(deltaMs, gesture = false) {
		follow = false;
		setView(from + deltaMs, to + deltaMs, gesture);
	}

	// The time at p when a recorded range covers it, for onHover; null (once) when none.
	let hovering = false;
	function hover(p) {
		const ms = msAt(p);
		const i = lowerBound(segs, ms, segEnd);
		if (i < segs.length && segs[i][0] <= ms && ms < segs[i][1]) {
			hovering = true;
			onHover({ ms, p, size });
		} else {
			unhover();
		}
	}

	function unhover() {
		if (hovering) {
			hovering = false;
			onHover(null);
		}
	}

	function seek(ms) {
		playhead = Math.min(Math.max(ms, dayStart), dayEnd);
		seeking = true;
		follow = true;
		placePlayhead();
		onSeek(playhead);
	}

	// Pointer interaction: one pointer pans (or clicks), two pinch, the handle drags.
	const pointers = new Map();
	let gesture = null;
	const axis = (e) => {
		const r = root.getBoundingClientRect();
		return horizontal ? e.clientX - r.left : e.clientY - r.top;
	};

	root.addEventListener('pointerdown', (e) => {
		if (e.button !== 0)
			return;
		pointers.set(e.pointerId, axis(e));
		root.setPointerCapture(e.pointerId);
		if (e.target === handle) {
			gesture = { kind: 'playhead' };
		} else if (pointers.size === 2) {
			const [a, b] = [...pointers.values()];
			gesture = { kind: 'pinch', dist: Math.abs(a - b) || 1, from, to, mid: msAt((a + b) / 2) };
		} else {
			gesture = { kind: 'press', start: axis(e), from, to, target: e.target };
		}
	});
	root.addEventListener('pointermove', (e) => {
		if (!pointers.has(e.pointerId) || !gesture) {
			if (e.pointerType === 'mouse' && !pointers.size)
				hover(axis(e));
			return;
		}
		const p = axis(e);
		pointers.set(e.pointerId, p);
		if (gesture.kind === 'playhead') {
			gesture.at = Math.min(Math.max(msAt(p), dayStart), dayEnd);
			playhead = gesture.at;
			follow = false;
			placePlayhead();
			hover(px(playhead));
		} else if (gesture.kind === 'pinch' && pointers.size === 2) {
			unhover();
			const [a, b] = [...pointers.values()];
			const span = ((gesture.to - gesture.from) * gesture.dist) / (Math.abs(a - b) || 1);
			const r = (gesture.mid - gesture.from) / (gesture.to - gesture.from);
			setView(gesture.mid - r * span, gesture.mid - r * span + span, true);
		} else if (gesture.kind === 'press' || gesture.kind === 'pan') {
			if (gesture.kind === 'press' && Math.abs(p - gesture.start) < DRAG_PX)
				return;
			gesture.kind = 'pan';
			follow = false;
			unhover();
			const d = ((gesture.start - p) / size) * (gesture.to - gesture.from);
			setView(gesture.from + d, gesture.to + d, true);
		}
	});
	const release = (e) => {
		if (!pointers.delete(e.pointerId) || !gesture)
			return;
		const g = gesture;
		gesture = pointers.size ? { kind: 'pinch-end' } : null;
		if (g.kind === 'playhead') {
			unhover();
			seek(g.at ?? playhead);
		} else if (g.kind === 'press' && e.type === 'pointerup') {
			activate(g.target, axis(e));
		}
	};
	root.addEventListener('pointerup', release);
	root.addEventListener('pointercancel', release);
	root.addEventListener('pointerleave', (e) => {
		if (e.pointerType === 'mouse' && !pointers.size)
			unhover();
	});

	function activate(target, p) {
		const k = target.dataset && target.dataset.k;
		if (k !== undefined) {
			const c = shown[+k];
			if (c.count === 1) {
				onOpenEvent(c.first);
			} else {
				const pad = Math.max((c.lastStart - c.first.start) * 0.25, minSpan / 2);
				setView(c.first.start - pad, c.lastStart + pad);
			}
			return;
		}
		seek(msAt(p));
	}

	root.addEventListener('click', (e) => {
		// Keyboard activation of a marker (pointer clicks are handled on pointerup).
		if (e.detail === 0 && e.target.dataset && e.target.dataset.k !== undefined)
			activate(e.target, 0);
	});

	root.addEventListener('wheel', (e) => {
		e.preventDefault();
		const d = horizontal && Math.abs(e.deltaX) > Math.abs(e.deltaY) ? e.deltaX : e.deltaY;
		if (e.shiftKey || (horizontal && Math.abs(e.deltaX) > Math.abs(e.deltaY)))
			pan((d / size) * (to - from), true);
		else
			zoom(Math.exp(d * 0.0015), msAt(axis(e)), true);
	}, { passive: false });

	// Keyboard n / p: the next / previous event (of the filtered types) after / before
	// the playhead (or the middle of the view): centre it and open it.
	function jumpEvent(next) {
		const at = playhead ?? (from + to) / 2;
		let i = lowerBound(evs, next ? at + 1000 : at - 1000, evStart);
		if (!next)
			i--;
		while (i >= 0 && i < evs.length && filter && !filter.has(evs[i].label))
			i += next ? 1 : -1;
		if (i < 0 || i >= evs.length)
			return;
		const ev = evs[i];
		const span = to - from;
		setView(ev.start - span / 2, ev.start + span / 2);
		onOpenEvent(ev);
	}

	root.addEventListener('keydown', (e) => {
		const span = to - from;
		const onHandle = e.target === handle;
		const back = e.key === 'ArrowLeft' || e.key === 'ArrowUp';
		const fwd = e.key === 'ArrowRight' || e.key === 'ArrowDown';
		if (onHandle && (back || fwd)) {
			const step = e.shiftKey ? 10 * MIN : MIN;
			seek((playhead ?? from) + (back ? -step : step));
		} else if (back || fwd) {
			pan((back ? -0.1 : 0.1) * span);
		} else if (e.key === '+' || e.key === '=') {
			zoom(0.5);
		} else if (e.key === '-' || e.key === '_') {
			zoom(2);
		} else if (e.key === 'Home') {
			setView(dayStart, dayEnd);
		} else if (e.key === 'Enter' && e.target === root) {
			seek((from + to) / 2);
		} else if (e.key === 'n' || e.key === 'p') {
			jumpEvent(e.key === 'n');
		} else {
			return;
		}
		e.preventDefault();
	});

	const ro = typeof ResizeObserver === 'function' ? new ResizeObserver(() => {
		const old = size;
		measure();
		if (size !== old)
			schedule();
	}) : null;
	if (ro)
		ro.observe(root);

	return {
		// segments: [[startMs, endMs]] in any order; events: normalized events (adapt.js)
		setData({ segments, events }) {
			segs = segments.map((s) => [s[0], s[1]]).sort((a, b) => a[0] - b[0]);
			evs = events.slice().sort((a, b) => a.start - b.start);
			maxDur = 0;
			for (const ev of evs)
				maxDur = Math.max(maxDur, ev.end - ev.start);
			schedule();
		},
		labels() {
			const set = new Set();
			for (const ev of evs)
				set.add(ev.label);
			return [...set].sort();
		},
		setFilter(labels) {
			filter = labels ? new Set(labels) : null;
			render();
		},
		setView: (f, t) => setView(f, t),
		zoom: (factor, anchor) => zoom(factor, anchor),
		pan: (deltaMs) => pan(deltaMs),
		seek,
		// From playback state messages: moves the playhead, ends the seeking state, keeps
		// the playhead in view while following.
		setPlayhead(ms, { seeking: s = false } = {}) {
			// While a finger or the mouse holds the handle, the user places it: a state
			// arriving meanwhile describes the old position and must not move it.
			if (gesture && gesture.kind === 'playhead')
				return;
			playhead = ms;
			seeking = s;
			if (follow && !gesture && (ms < from || ms > to)) {
				const span = to - from;
				setView(ms - span * 0.1, ms + span * 0.9);
			}
			placePlayhead();
		},
		get view() {
			return { from, to };
		},
		get playhead() {
			return playhead;
		},
		get stats() {
			return { ...stats };
		},
		primitiveCount: () => track.childElementCount,
		render,
		destroy() {
			if (ro)
				ro.disconnect();
			if (pending)
				cancelAnimationFrame(pending);
			clearTimeout(settle);
			root.replaceChildren();
		},
	};
}
