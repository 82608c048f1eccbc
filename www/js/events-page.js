// Events page: free-text search with camera, label and time filters, a result grid
// with lazily loaded thumbnails (every event has one: its JPEG's, else its recorded
// keyframe's, decision 0021) and cursor paging, an event detail (its picture,
// attributes, the recording from 5 s before it over WebRTC, the timeline there and a
// clip to download) and new events arriving live from /api/v1/live.
import { startShell, showError } from './shell.js';
import { allCameras, events as searchEvents, thumbnailUrl, snapshotUrl } from './adapt.js';
import { subscribe } from './feed.js';
import { RtcView } from './rtc.js';
import { el, dateTime, ymd, parseLocal, toLocalInput, duration } from './format.js';

const main = document.getElementById('app');
const params = new URLSearchParams(location.search);
const PAGE = 48;
let filters = { q: params.get('q') || '', camera: params.get('camera') || '', label: params.get('label') || '', from: NaN, to: NaN };
let cursor = '';
let shownIds = new Set();
const labelsSeen = new Set(['person', 'vehicle', 'animal', 'motion']);
const ui = {};
const BEFORE_MS = 5000; // the player and the clip start this long before the event
const AFTER_MS = 10000; // and the clip ends this long after it
const FRESH_MS = 8000; // recorderd waits this long from an event's start for its video (decision 0039)

const thumbImg = (ev) => el('img', { class: 'ev-thumb', loading: 'lazy', decoding: 'async', alt: '', width: '320', height: '180', src: thumbnailUrl(ev.id, ev.site) });

// An event without a picture (no JPEG, no linked keyframe) that has just started may be a
// camera alarm whose group of pictures is still being recorded: its thumbnail is asked
// for at once (recorderd answers when the video is there); an older one, or one whose
// answer is an error, shows a grey box.
function noPicture(ev) {
	const box = () => el('div', { class: 'ev-thumb', 'aria-hidden': 'true' });
	if (Date.now() - ev.start > FRESH_MS)
		return box();
	const img = thumbImg(ev);
	img.addEventListener('error', () => img.replaceWith(box()), { once: true });
	img.addEventListener('load', () => { ev.hasPicture = true; }, { once: true }); // the detail shows its snapshot
	return img;
}

// The detail's picture: the snapshot of an event that has one or has just started (it
// waits for the video like the thumbnail), else a notice.
function snapshot(ev) {
	const notice = () => el('p', { class: 'notice', text: 'This event has no picture yet.' });
	if (!ev.hasPicture && Date.now() - ev.start > FRESH_MS)
		return notice();
	const img = el('img', { src: snapshotUrl(ev.id, ev.site), alt: `Snapshot of ${ev.label} on ${ev.camera}` });
	img.addEventListener('error', () => img.replaceWith(notice()), { once: true });
	return img;
}

const clipUrl = (ev) => `/api/v1/export?${new URLSearchParams({ camera: ev.camera, stream: 'main', from: ev.start - BEFORE_MS, to: Math.max(ev.end, ev.start) + AFTER_MS })}`;

function matches(ev) {
	const f = filters;
	if (f.camera && ev.camera !== f.camera)
		return false;
	if (f.label && !ev.labels.some((l) => l.name === f.label))
		return false;
	if (Number.isFinite(f.from) && ev.start < f.from)
		return false;
	if (Number.isFinite(f.to) && ev.start >= f.to)
		return false;
	if (f.q) {
		const words = [ev.camera, ev.id, ...ev.labels.map((l) => l.name), ...Object.entries(ev.attributes).flat()].join(' ').toLowerCase();
		return f.q.toLowerCase().split(/\s+/).filter(Boolean).every((t) => words.split(/[^a-z0-9._:-]+/).some((w) => w.startsWith(t)));
	}
	return true;
}

function item(ev, jpegBlob) {
	for (const l of ev.labels)
		labelsSeen.add(l.name);
	const top = ev.labels[0];
	let img;
	if (jpegBlob) {
		const url = URL.createObjectURL(jpegBlob);
		img = el('img', { class: 'ev-thumb', alt: '', width: '320', height: '180', src: url, onload: () => URL.revokeObjectURL(url) });
	} else if (ev.hasPicture) {
		img = thumbImg(ev);
	} else {
		img = noPicture(ev);
	}
	const b = el('button', {
		class: 'ev-item', type: 'button', 'data-id': ev.id,
		'aria-label': `${ev.label} on ${ev.camera} at ${dateTime(ev.start)}`,
		onclick: () => openDetail(ev),
	}, img, el('span', { class: 'ev-meta' },
		el('strong', {}, el('span', { class: 'tag', text: ev.label }), top && top.score < 1 ? ` ${Math.round(top.score * 100)} %` : ''),
		el('span', { text: ev.camera }),
		el('span', { class: 'muted', text: dateTime(ev.start) })));
	return el('li', {}, b);
}

async function run(more) {
	if (!more) {
		cursor = '';
		shownIds = new Set();
		ui.list.replaceChildren();
	}
	ui.more.hidden = true;
	ui.count.textContent = 'Searching…';
	const { from, to, camera, label, q } = filters;
	try {
		const page = await searchEvents({ camera, label, q, from: Number.isFinite(from) ? from : undefined, to: Number.isFinite(to) ? to : undefined, limit: PAGE, cursor });
		for (const ev of page.events) {
			if (shownIds.has(ev.id))
				continue;
			shownIds.add(ev.id);
			ui.list.append(item(ev));
		}
		cursor = page.cursor;
		ui.more.hidden = !cursor;
		ui.count.textContent = shownIds.size ? `${shownIds.size}${cursor ? '+' : ''} events` : 'No events match.';
		ui.labels.replaceChildren(...[...labelsSeen].sort().map((l) => el('option', { value: l })));
	} catch (err) {
		ui.count.textContent = err.message;
	}
}

function arrive(ev, jpeg) {
	if (!matches(ev))
		return;
	const old = ui.list.querySelector(`[data-id="${CSS.escape(ev.id)}"]`);
	const li = item(ev, jpeg);
	li.firstChild.classList.add('fresh');
	if (old)
		old.parentElement.replaceWith(li);
	else
		ui.list.prepend(li);
	shownIds.add(ev.id);
	ui.count.textContent = `${shownIds.size}${cursor ? '+' : ''} events`;
}

let detailView = null;
function openDetail(ev) {
	const d = ui.dialog;
	const video = el('video', { autoplay: true, muted: true, playsinline: true, controls: false });
	const state = el('span', { class: 'pos', role: 'status', text: 'Connecting to the recording…' });
	const attrs = el('dl', {},
		el('dt', { text: 'Camera' }), el('dd', { text: `${ev.camera} (${ev.stream})` }),
		el('dt', { text: 'Time' }), el('dd', { text: `${dateTime(ev.start)}${ev.end > ev.start ? ` · ${duration(ev.end - ev.start)}` : ''}` }),
		el('dt', { text: 'Labels' }), el('dd', { text: ev.labels.map((l) => `${l.name} ${Math.round((l.score ?? 1) * 100)} %`).join(', ') || '—' }),
		...Object.entries(ev.attributes).flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })]),
		el('dt', { text: 'Event id' }), el('dd', { text: `${ev.id} (revision ${ev.revision})` }));
	d.replaceChildren(
		el('div', { class: 'detail-head' },
			el('h2', { text: `${ev.label} · ${ev.camera}` }),
			el('a', { class: 'btn', href: `/timeline.html?camera=${encodeURIComponent(ev.camera)}&day=${ymd(ev.start - BEFORE_MS)}&t=${ev.start - BEFORE_MS}`, text: 'Timeline' }),
			// A hub does not export another site's recordings (decision 0033).
			ev.site ? null : el('a', { class: 'btn', href: clipUrl(ev), download: `${ev.camera}-${ev.id}.mp4`, text: 'Download clip' }),
			el('button', { class: 'btn', type: 'button', text: 'Close', onclick: () => d.close() })),
		el('div', { class: 'detail-body' },
			snapshot(ev),
			el('div', { class: 'player' }, video, el('div', { class: 'ov' }, state)),
			attrs));
	d.showModal();
	detailView = new RtcView({
		camera: ev.camera,
		stream: ev.stream,
		mode: 'playback',
		at: ev.start - BEFORE_MS,
		video,
		onStatus: (s, text) => {
			state.textContent = s === 'live' ? 'Recording' : text;
		},
		onState: (s) => {
			if (s.position_ms > 0)
				state.textContent = `${dateTime(s.position_ms)}${s.ended ? ' · end of recording' : ''}`;
		},
	});
}

function build(cams) {
	const q = el('input', { type: 'search', name: 'q', value: filters.q, placeholder: 'Search events: person, porch, det-42…', 'aria-label': 'Search' });
	const cam = el('select', { name: 'camera' }, el('option', { value: '', text: 'All cameras' }));
	for (const c of cams)
		cam.append(el('option', { value: c.name, text: c.name, selected: c.name === filters.camera }));
	ui.labels = el('datalist', { id: 'ev-labels' });
	const label = el('input', { name: 'label', list: 'ev-labels', value: filters.label, placeholder: 'any', size: '10' });
	const from = el('input', { type: 'datetime-local', name: 'from' });
	const to = el('input', { type: 'datetime-local', name: 'to' });
	const form = el('form', { class: 'toolbar', role: 'search' },
		el('h1', { text: 'Events' }),
		el('label', { class: 'field', style: 'flex:1 1 260px' }, 'Search', q),
		el('label', { class: 'field' }, 'Camera', cam),
		el('label', { class: 'field' }, 'Label', label, ui.labels),
		el('label', { class: 'field' }, 'From', from),
		el('label', { class: 'field' }, 'To', to),
		el('button', { class: 'btn primary', type: 'submit', text: 'Search' }));
	form.addEventListener('submit', (e) => {
		e.preventDefault();
		filters = { q: q.value.trim(), camera: cam.value, label: label.value.trim(), from: parseLocal(from.value), to: parseLocal(to.value) };
		const u = new URLSearchParams();
		for (const k of ['q', 'camera', 'label'])
			if (filters[k])
				u.set(k, filters[k]);
		history.replaceState(null, '', u.toString() ? '?' + u : location.pathname);
		run(false);
	});
	from.max = to.max = toLocalInput(Date.now() + 86400000);
	ui.count = el('span', { class: 'who', role: 'status', 'aria-live': 'polite' });
	ui.live = el('span', { class: 'badge', 'data-state': 'connecting', text: 'Live updates', style: 'background:var(--surface-2);color:var(--text)' });
	ui.list = el('ul', { class: 'ev-list', 'aria-label': 'Events' });
	ui.more = el('button', { class: 'btn', type: 'button', text: 'Load more', hidden: true, onclick: () => run(true) });
	ui.dialog = el('dialog', { class: 'detail', 'aria-label': 'Event' });
	ui.dialog.addEventListener('close', () => {
		if (detailView)
			detailView.close();
		detailView = null;
		ui.dialog.replaceChildren();
	});
	main.replaceChildren(form, el('div', { class: 'toolbar' }, ui.count, el('span', { style: 'flex:1' }), ui.live), ui.list, el('div', { class: 'pager' }, ui.more), ui.dialog);
}

try {
	await startShell('events');
	build((await allCameras()).cameras);
	await run(false);
	subscribe({
		onEvent: arrive,
		onResync: () => run(false),
		onStatus: (s) => {
			ui.live.dataset.state = s;
			ui.live.textContent = s === 'live' ? 'Live updates on' : 'Live updates reconnecting';
		},
	});
} catch (err) {
	showError(main, err);
}
