// Timeline page: one camera and one day (?camera=&day=YYYY-MM-DD[&t=MS]). Loads coverage ranges and the day's events,
// mounts the timeline component (horizontal on desktop, vertical on phones), and plays
// stored recordings over WebRTC from wherever the user seeks, the playhead following
// the server's state messages. Hovering (or dragging the playhead) shows the recorded
// picture there (timeline-preview.js).
import { startShell, showError } from './shell.js';
import { allCameras, coverage, allEvents, previewUrl } from './adapt.js';
import { createTimeline } from './timeline.js';
import { createPreview } from './timeline-preview.js';
import { RtcView } from './rtc.js';
import { el, dateTime, ymd, parseDay, localDayStart, DAY, HOUR, MIN } from './format.js';

const main = document.getElementById('app');
const params = new URLSearchParams(location.search);
const narrow = matchMedia('(max-width: 720px)');
let cams = [];
let camera = params.get('camera') || '';
let day = parseDay(params.get('day'));
let focusAt = +(params.get('t') || NaN);
let data = { segments: [], events: [] };
let tl = null;
let preview = null;
let view = null;
let filter = null;
let ui = {};
let seekTarget = null;
const SEEK_NEAR_MS = 30000;

const LABEL_COLORS = { person: '--ev-person', vehicle: '--ev-vehicle', car: '--ev-vehicle', animal: '--ev-animal', dog: '--ev-animal', cat: '--ev-animal', motion: '--ev-motion' };

function updateUrl() {
	const q = new URLSearchParams({ camera, day: ymd(day) });
	history.replaceState(null, '', '?' + q);
}

// Recording availability of the day: exact ranges of the main stream (else sub), and
// hour buckets where exact ranges do not reach (before the stream's exact_from).
function segmentsOf(cov) {
	const cam = cov.cameras.find((c) => c.name === camera) || cov.cameras[0];
	if (!cam)
		return [];
	const s = cam.streams.find((x) => x.name === 'main' && (x.ranges.length || x.buckets.some((b) => b.covered))) || cam.streams[0];
	if (!s)
		return [];
	const out = s.ranges.slice();
	for (const b of s.buckets)
		if (b.covered > 0 && b.start < s.exactFrom)
			out.push([b.start, Math.min(b.start + b.covered, s.exactFrom)]);
	return out;
}

function status(text) {
	ui.pos.textContent = text;
}

function stopPlayback() {
	if (view)
		view.close();
	view = null;
	ui.play.disabled = true;
}

function seek(ms) {
	seekTarget = { at: ms, t: performance.now() };
	ui.empty.hidden = true;
	status(`Seeking to ${dateTime(ms)}…`);
	if (view) {
		view.control('seek', { at_ms: Math.round(ms) });
		return;
	}
	view = new RtcView({
		camera,
		stream: 'main',
		mode: 'playback',
		at: ms,
		video: ui.video,
		muted: ui.sound.getAttribute('aria-pressed') !== 'true',
		onAudio(has) {
			ui.sound.hidden = !has;
		},
		onStatus(state, text) {
			ui.badge.dataset.state = state;
			ui.badge.textContent = state === 'live' ? 'Playback' : state[0].toUpperCase() + state.slice(1);
			if (text)
				status(text);
		},
		onState(s) {
			if (!(s.position_ms > 0))
				return;
			// Until the server reports a position near the seek target (or 5 s passed),
			// states describe the old position: the playhead stays where the user put it.
			if (seekTarget !== null && Math.abs(s.position_ms - seekTarget.at) > SEEK_NEAR_MS && performance.now() - seekTarget.t < 5000 && !s.ended)
				return;
			seekTarget = null;
			tl.setPlayhead(s.position_ms);
			ui.play.disabled = false;
			ui.play.textContent = s.playing ? 'Pause' : 'Play';
			ui.play.dataset.playing = String(!!s.playing);
			ui.fallback.hidden = !s.fallback;
			ui.fallback.textContent = s.fallback === 'transcode' ? 'Transcoded to H.264' : s.fallback ? 'H.264 fallback' : '';
			status(s.ended ? `End of recording · ${dateTime(s.position_ms)}` : `${dateTime(s.position_ms)} · ${s.rate || 1}×`);
		},
	});
}

function mountTimeline() {
	if (preview)
		preview.destroy();
	if (tl)
		tl.destroy();
	const vertical = narrow.matches;
	ui.tlBox.className = '';
	ui.page.classList.toggle('v', vertical);
	const prev = tl;
	const cam = camera;
	const pv = createPreview(ui.tlBox, {
		horizontal: !vertical,
		url: (ms) => previewUrl(cam, ms),
	});
	preview = pv;
	tl = createTimeline(ui.tlBox, {
		orientation: vertical ? 'vertical' : 'horizontal',
		dayStart: day,
		dayEnd: day + DAY,
		onSeek: seek,
		onHover: (h) => (h ? pv.show(h.ms, h.p, h.size) : pv.hide()),
		onOpenEvent: (ev) => {
			tl.seek(Math.max(day, ev.start - 5000));
			ui.evInfo.textContent = `${ev.label} at ${dateTime(ev.start)}`;
		},
	});
	tl.setData(data);
	if (filter)
		tl.setFilter(filter);
	if (prev && prev.playhead !== null)
		tl.setPlayhead(prev.playhead);
	ui.filters.hidden = vertical;
}

function renderFilters() {
	ui.filters.replaceChildren();
	const labels = tl.labels();
	if (!labels.length)
		return;
	ui.filters.append(el('span', { class: 'sr-only', text: 'Event types' }));
	for (const l of labels) {
		const box = el('input', { type: 'checkbox', checked: !filter || filter.includes(l), value: l });
		box.addEventListener('change', () => {
			filter = [...ui.filters.querySelectorAll('input:checked')].map((i) => i.value);
			if (filter.length === labels.length)
				filter = null;
			tl.setFilter(filter);
		});
		ui.filters.append(el('label', { class: 'chip' }, box, el('span', { class: 'dot', style: `--c:var(${LABEL_COLORS[l] || '--ev-other'})` }), el('span', { text: l })));
	}
}

async function load() {
	stopPlayback();
	updateUrl();
	ui.empty.hidden = false;
	status('Loading…');
	const [cov, evs] = await Promise.all([
		coverage({ camera, from: day, to: day + DAY, bucket: HOUR }),
		allEvents({ camera, from: day, to: day + DAY }),
	]);
	data = { segments: segmentsOf(cov), events: evs };
	filter = null;
	mountTimeline();
	renderFilters();
	// ?t=MS (from an event): show the half hour around it with the playhead there.
	if (focusAt >= day && focusAt < day + DAY) {
		tl.setView(focusAt - 15 * MIN, focusAt + 15 * MIN);
		tl.setPlayhead(focusAt);
		focusAt = NaN;
	}
	const recorded = data.segments.reduce((n, s) => n + Math.max(0, Math.min(s[1], day + DAY) - Math.max(s[0], day)), 0);
	status(`${data.events.length} events · ${Math.round((recorded / DAY) * 100)} % recorded · click the timeline to play`);
}

function build() {
	const camSel = el('select', { id: 'tl-camera' });
	for (const c of cams)
		camSel.append(el('option', { value: c.name, text: c.name, selected: c.name === camera }));
	camSel.addEventListener('change', () => {
		camera = camSel.value;
		load().catch((e) => showError(ui.tlBox, e));
	});
	const dayIn = el('input', { type: 'date', id: 'tl-day', value: ymd(day), max: ymd(Date.now()) });
	const go = (d) => {
		day = localDayStart(d + 2 * HOUR);
		dayIn.value = ymd(day);
		load().catch((e) => showError(ui.tlBox, e));
	};
	dayIn.addEventListener('change', () => {
		const d = parseDay(dayIn.value);
		if (Number.isFinite(d))
			go(d);
	});
	ui.video = el('video', { autoplay: true, muted: true, playsinline: true });
	ui.badge = el('span', { class: 'badge', 'data-state': 'offline', text: 'Stopped' });
	ui.pos = el('span', { class: 'pos', role: 'status', 'aria-live': 'polite' });
	ui.fallback = el('span', { class: 'badge', hidden: true });
	ui.empty = el('div', { class: 'msg', text: 'Click or tap the timeline to play the recording from there.' });
	ui.play = el('button', {
		class: 'btn', type: 'button', text: 'Pause', disabled: true,
		onclick: () => view && view.control(ui.play.dataset.playing === 'true' ? 'pause' : 'play'),
	});
	// Sound: off until turned on; the server sends it at 1x only.
	ui.sound = el('button', {
		class: 'btn sound', type: 'button', text: 'Muted', hidden: true, 'aria-pressed': 'false', 'aria-label': 'Unmute',
		onclick: () => {
			const on = ui.sound.getAttribute('aria-pressed') !== 'true';
			ui.sound.setAttribute('aria-pressed', String(on));
			ui.sound.setAttribute('aria-label', on ? 'Mute' : 'Unmute');
			ui.sound.textContent = on ? 'Sound on' : 'Muted';
			if (view)
				view.setMuted(!on);
		},
	});
	const rate = el('select', { 'aria-label': 'Playback speed' });
	for (const r of [1, 2, 4, 8])
		rate.append(el('option', { value: String(r), text: `${r}×` }));
	rate.addEventListener('change', () => view && view.control('rate', { rate: +rate.value }));
	ui.filters = el('div', { class: 'tl-filters', role: 'group', 'aria-label': 'Event types' });
	ui.tlBox = el('div');
	ui.evInfo = el('span', { class: 'who', role: 'status' });
	ui.page = el('div', { class: 'tl-page' });
	const zoomBtn = (text, label, f) => el('button', { class: 'btn', type: 'button', text, 'aria-label': label, onclick: f });
	main.replaceChildren(
		el('div', { class: 'toolbar' },
			el('h1', { text: 'Timeline' }),
			el('label', { class: 'field' }, 'Camera', camSel),
			el('label', { class: 'field' }, 'Day', dayIn),
			el('div', { class: 'seg', role: 'group', 'aria-label': 'Day' },
				zoomBtn('‹', 'Previous day', () => go(day - DAY)),
				zoomBtn('›', 'Next day', () => go(day + DAY)))),
		ui.page);
	ui.page.append(
		el('div', { class: 'player' }, ui.video, ui.empty, el('div', { class: 'ov' }, ui.badge, ui.pos, ui.fallback)),
		el('div', { class: 'tl-side' },
			el('div', { class: 'tl-controls' },
				el('div', { class: 'seg', role: 'group', 'aria-label': 'Zoom' },
					zoomBtn('−', 'Zoom out', () => tl.zoom(2)),
					zoomBtn('+', 'Zoom in', () => tl.zoom(0.5)),
					zoomBtn('24 h', 'Show the whole day', () => tl.setView(day, day + DAY))),
				ui.play, rate, ui.sound, ui.filters, ui.evInfo),
			el('div', { class: 'tl-legend', 'aria-hidden': 'true' },
				el('span', {}, el('i'), 'recorded'), el('span', {}, el('i', { class: 'gap' }), 'no recording'))),
		ui.tlBox);
	narrow.addEventListener('change', () => {
		mountTimeline();
		renderFilters();
	});
}

try {
	await startShell('timeline');
	cams = (await allCameras()).cameras;
	if (!cams.length) {
		main.replaceChildren(el('p', { class: 'empty', text: 'No cameras are configured.' }));
	} else {
		if (!cams.some((c) => c.name === camera))
			camera = cams[0].name;
		if (!Number.isFinite(day))
			day = localDayStart(Number.isFinite(focusAt) ? focusAt : Date.now());
		build();
		await load();
	}
} catch (err) {
	showError(main, err);
}
