// The timeline's hover preview (issue 20, decision 0025): a picture of the recorded
// keyframe at or before the time under the mouse (desktop) or the playhead being dragged
// (touch), from GET /api/v1/cameras/CAM/thumbnail?t=MS. One element, made at the first
// hover and reused, in the timeline's root beside its drawn track and moved with a
// transform: a hover never draws the timeline again nor moves anything else. Each answer
// names the span its keyframe's GOP covers (Keyframe-Time, Keyframe-Until): a time inside
// a span already fetched shows that picture without asking again. Fetches are lazy,
// at most IN_FLIGHT at once (a newer one aborts the oldest) and at most one new one
// every THROTTLE_MS while the pointer moves; pictures kept are bounded by KEEP.
const IN_FLIGHT = 2;
const THROTTLE_MS = 100;
const KEEP = 48;
const W = 192;
const H = 108;
const GAP = 12;

export function createPreview(root, { horizontal, url }) {
	let box = null;
	let img = null;
	let when = null;
	const pics = []; // { from, until, src }, the most recently shown last
	const flights = []; // { t, ctl }
	const misses = new Set(); // times answered without a picture, not asked again
	let want = null; // the time to show, null when hidden
	let timer = 0;
	let last = -Infinity;
	let shownFrom = null;
	const stats = { requests: 0, aborted: 0, fromMemory: 0 };

	function make() {
		box = document.createElement('div');
		box.className = 'tl-preview';
		box.hidden = true;
		box.setAttribute('aria-hidden', 'true');
		img = document.createElement('img');
		img.alt = '';
		img.width = W;
		img.height = H;
		when = document.createElement('span');
		box.append(img, when);
		root.append(box);
	}

	function find(ms) {
		for (let i = pics.length - 1; i >= 0; i--)
			if (ms >= pics[i].from && ms < pics[i].until)
				return i;
		return -1;
	}

	function display(i) {
		const p = pics.splice(i, 1)[0];
		pics.push(p);
		if (shownFrom !== p.from) {
			shownFrom = p.from;
			img.src = p.src;
			box.dataset.keyframe = String(p.from);
			when.textContent = new Date(p.from).toLocaleTimeString();
		}
		box.hidden = false;
	}

	function keep(from, until, blob) {
		if (pics.some((p) => p.from === from))
			return;
		pics.push({ from, until, src: URL.createObjectURL(blob) });
		while (pics.length > KEEP) {
			const old = pics.shift();
			URL.revokeObjectURL(old.src);
			if (old.from === shownFrom)
				shownFrom = null;
		}
	}

	function miss(t) {
		misses.add(t);
		if (misses.size > KEEP)
			misses.delete(misses.values().next().value);
	}

	async function fetchAt(t) {
		while (flights.length >= IN_FLIGHT) {
			flights.shift().ctl.abort();
			stats.aborted++;
		}
		const f = { t, ctl: new AbortController() };
		flights.push(f);
		stats.requests++;
		last = performance.now();
		try {
			const r = await fetch(url(t), { signal: f.ctl.signal, credentials: 'same-origin' });
			const from = +r.headers.get('Keyframe-Time');
			const until = +r.headers.get('Keyframe-Until');
			if (r.ok && until > from)
				keep(from, until, await r.blob());
			else
				miss(t);
		} catch (err) {
			if (err.name !== 'AbortError') {
				miss(t);
				console.warn(`timeline preview at ${t}: ${err.message}`);
			}
		} finally {
			const i = flights.indexOf(f);
			if (i >= 0)
				flights.splice(i, 1);
		}
		update();
	}

	function update() {
		if (want === null) {
			if (box)
				box.hidden = true;
			return;
		}
		const i = find(want);
		if (i >= 0) {
			stats.fromMemory++;
			display(i);
			return;
		}
		if (timer || misses.has(want) || flights.some((f) => f.t === want))
			return;
		timer = setTimeout(() => {
			timer = 0;
			if (want !== null && find(want) < 0)
				fetchAt(want);
		}, Math.max(0, last + THROTTLE_MS - performance.now()));
	}

	function hide() {
		want = null;
		clearTimeout(timer);
		timer = 0;
		if (box && !box.hidden)
			box.hidden = true;
	}

	return {
		// ms: the time; p: its position along the timeline (px), size: the timeline's length.
		show(ms, p, size) {
			if (!box)
				make();
			want = Math.round(ms);
			if (horizontal) {
				const x = p + GAP + W <= size ? p + GAP : p - GAP - W;
				box.style.transform = `translate(${Math.round(Math.max(0, x))}px,0)`;
			} else {
				box.style.transform = `translate(0,${Math.round(Math.min(Math.max(0, p - H / 2), Math.max(0, size - H)))}px)`;
			}
			update();
		},
		hide,
		destroy() {
			hide();
			for (const f of flights.splice(0))
				f.ctl.abort();
			for (const p of pics.splice(0))
				URL.revokeObjectURL(p.src);
			misses.clear();
			if (box)
				box.remove();
			box = null;
		},
		get stats() {
			return { ...stats, inFlight: flights.length, kept: pics.length };
		},
	};
}
