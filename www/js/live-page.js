// Live page: camera grid (1, 2x2, 3x3, 4x4) of WebRTC tiles with name, clock and
// connection state, click (or Enter) to enlarge, main/sub stream switch, paging when
// there are more cameras than cells, a sound toggle on each tile of a camera that sends
// sound (muted by default; a camera unmuted stays so while the page is open). Each tile
// reconnects by itself (rtc.js) and says when it plays over the MSE fallback.
import { startShell, showError } from './shell.js';
import { allCameras } from './adapt.js';
import { RtcView } from './rtc.js';
import { el, hms, ymd } from './format.js';

const LAYOUTS = [1, 2, 3, 4];
const main = document.getElementById('app');
const store = (k, v) => {
	try {
		if (v === undefined)
			return localStorage.getItem(k);
		localStorage.setItem(k, v);
	} catch {
		return null;
	}
	return v;
};

let cams = [];
let sites = null; // a hub's sites and their states (null: not a hub)
let cols = +(store('kp.live.cols') || 2);
let gridStream = store('kp.live.stream') || 'sub';
let bigStream = store('kp.live.bigStream') || 'main';
let page = 0;
let enlarged = null;
let tiles = [];
const unmuted = new Set(); // cameras whose sound the user turned on

const STATE_TEXT = { connecting: 'Connecting', live: 'Live', reconnecting: 'Reconnecting', error: 'Error', offline: 'Offline' };

function tile(cam, streamName) {
	const video = el('video', { autoplay: true, muted: true, playsinline: true, 'aria-hidden': 'true' });
	video.muted = true;
	const badge = el('span', { class: 'badge', 'data-state': 'connecting', text: STATE_TEXT.connecting });
	const msg = el('div', { class: 'msg', role: 'status' });
	const clock = el('span', { class: 'clock' });
	const info = el('span', { class: 'info', text: streamName });
	const fallback = el('span', { class: 'badge fallback', hidden: true });
	const sound = el('button', { class: 'btn sound', type: 'button', hidden: true });
	const showSound = () => {
		const on = unmuted.has(cam.name);
		sound.textContent = on ? 'Sound on' : 'Muted';
		sound.setAttribute('aria-pressed', String(on));
		sound.setAttribute('aria-label', on ? `Mute ${cam.name}` : `Unmute ${cam.name}`);
	};
	showSound();
	sound.addEventListener('click', (e) => {
		e.stopPropagation(); // not a click on the tile (enlarge)
		if (unmuted.has(cam.name))
			unmuted.delete(cam.name);
		else
			unmuted.add(cam.name);
		showSound();
		view.setMuted(!unmuted.has(cam.name));
	});
	sound.addEventListener('keydown', (e) => e.stopPropagation());
	const t = el('div', {
		class: 'tile',
		role: 'button',
		tabindex: '0',
		'data-camera': cam.name,
	}, video, el('div', { class: 'ov top' }, el('span', { class: 'name', text: cam.name }), badge), msg, fallback, el('div', { class: 'ov bottom' }, clock, el('span', { style: 'flex:1' }), sound, info));
	const toggle = () => {
		enlarged = enlarged ? null : cam.name;
		render();
	};
	t.addEventListener('click', toggle);
	t.addEventListener('keydown', (e) => {
		if (e.key === 'Enter' || e.key === ' ') {
			e.preventDefault();
			toggle();
		}
	});
	const view = new RtcView({
		camera: cam.name,
		stream: streamName,
		mode: 'live',
		video,
		muted: !unmuted.has(cam.name),
		onAudio(has) {
			sound.hidden = !has;
		},
		onStatus(state, text) {
			badge.dataset.state = state;
			badge.textContent = STATE_TEXT[state] || state;
			msg.textContent = state === 'live' ? '' : text;
		},
		onState(s) {
			const codec = (s.codec || '').toUpperCase();
			const mse = s.transport === 'mse';
			info.textContent = `${s.stream || streamName} · ${codec}${mse ? ' · MSE' : ''}`;
			t.dataset.transport = mse ? 'mse' : 'webrtc';
			fallback.hidden = !s.fallback && !mse;
			const sub = s.fallback === 'transcode' ? 'Transcoded to H.264' : s.fallback ? 'H.264 fallback: sub stream' : '';
			fallback.textContent = mse ? `MSE fallback (no WebRTC)${sub ? ' · ' + sub : ''}` : sub;
			fallback.title = mse ? `WebRTC could not connect (${s.why}); video comes over the WebSocket` : '';
		},
	});
	const day = el('span', { class: 'd' });
	const time = el('span');
	clock.append(day, time);
	const tick = () => {
		const now = Date.now();
		day.textContent = `${ymd(now)} `;
		time.textContent = hms(now);
	};
	tick();
	return { node: t, view, tick };
}

const SITE_TEXT = { up: 'Up', down: 'Unreachable', refused: 'Token refused', bad_answer: 'Bad answer', unknown: 'Not asked yet' };

// On a hub: one line per site with its state, so a dead site reads as such instead of
// leaving its cameras out silently (decision 0033).
function siteBar() {
	if (!sites)
		return null;
	const bar = el('ul', { class: 'sites', 'aria-label': 'Sites' });
	for (const s of sites)
		bar.append(el('li', { class: 'site', 'data-site': s.name, 'data-state': s.state, title: s.error },
			el('span', { class: 'name', text: s.name }), ' ',
			el('span', { class: 'badge', 'data-state': s.state === 'up' ? 'live' : 'error', text: SITE_TEXT[s.state] || s.state }),
			s.error ? el('span', { class: 'why', text: ` ${s.error}` }) : null));
	return bar;
}

// Every 10 s on a hub the sites are asked again: one that comes back or goes away
// changes the list of cameras and its line.
async function refreshSites() {
	const now = await allCameras().catch(() => null);
	if (!now)
		return;
	const key = (l) => JSON.stringify(l);
	const changed = key(now.sites) !== key(sites) || key(now.cameras.map((c) => c.name)) !== key(cams.map((c) => c.name));
	({ cameras: cams, sites } = now);
	if (changed)
		render();
}

function render() {
	// Tiles that stay (same camera and stream) keep their connection.
	const old = new Map(tiles.map((t) => [t.key, t]));
	tiles = [];
	const per = cols * cols;
	const pages = Math.max(1, Math.ceil(cams.length / per));
	page = Math.min(page, pages - 1);
	const shown = enlarged ? cams.filter((c) => c.name === enlarged) : cams.slice(page * per, page * per + per);
	const streamName = enlarged ? bigStream : gridStream;
	document.body.classList.toggle('live-enlarged', !!enlarged);

	const layoutSeg = el('div', { class: 'seg', role: 'group', 'aria-label': 'Grid layout' });
	for (const n of LAYOUTS)
		layoutSeg.append(el('button', {
			class: 'btn', type: 'button', 'aria-pressed': String(!enlarged && n === cols), text: n === 1 ? '1' : `${n}×${n}`,
			'aria-label': n === 1 ? 'One camera' : `${n} by ${n} grid`,
			onclick: () => {
				cols = n;
				enlarged = null;
				store('kp.live.cols', String(n));
				render();
			},
		}));
	const streamSeg = el('div', { class: 'seg', role: 'group', 'aria-label': 'Stream' });
	for (const s of ['main', 'sub'])
		streamSeg.append(el('button', {
			class: 'btn', type: 'button', 'aria-pressed': String(s === streamName), text: s === 'main' ? 'Main' : 'Sub',
			onclick: () => {
				if (enlarged)
					bigStream = store('kp.live.bigStream', s);
				else
					gridStream = store('kp.live.stream', s);
				render();
			},
		}));
	const bar = el('div', { class: 'toolbar' }, el('h1', { text: enlarged ? enlarged : 'Live' }));
	if (enlarged)
		bar.append(el('button', { class: 'btn', type: 'button', text: '← All cameras', onclick: () => { enlarged = null; render(); } }),
			el('a', { class: 'btn', href: `/timeline.html?camera=${encodeURIComponent(enlarged)}`, text: 'Timeline' }));
	bar.append(layoutSeg, streamSeg);
	if (!enlarged && pages > 1)
		bar.append(el('div', { class: 'seg', role: 'group', 'aria-label': 'Pages' },
			el('button', { class: 'btn', type: 'button', text: '‹', 'aria-label': 'Previous cameras', disabled: page === 0, onclick: () => { page--; render(); } }),
			el('span', { class: 'btn', text: `${page + 1} / ${pages}` }),
			el('button', { class: 'btn', type: 'button', text: '›', 'aria-label': 'Next cameras', disabled: page >= pages - 1, onclick: () => { page++; render(); } })));

	const grid = el('div', { class: 'grid', style: `--cols:${enlarged ? 1 : cols};--phone-cols:${enlarged || cols <= 2 ? 1 : 2}` });
	for (const c of shown) {
		// A camera with one stream (an RTSP camera without sub_url) shows that one.
		const name = !c.streams.length || c.streams.some((x) => x.name === streamName) ? streamName : c.streams[0].name;
		const key = `${c.name}\n${name}`;
		const t = old.get(key) || { ...tile(c, name), key };
		old.delete(key);
		t.node.setAttribute('aria-label', `${c.name}, ${name} stream. ${enlarged ? 'Press Escape to return to the grid' : 'Activate to enlarge'}`);
		tiles.push(t);
		grid.append(t.node);
	}
	for (const t of old.values())
		t.view.close();
	// replaceChildren would show a null (no site bar off a hub) as the text "null"
	main.replaceChildren(...[bar, siteBar(), cams.length ? grid : el('p', { class: 'empty', text: 'No cameras are configured.' })].filter(Boolean));
	if (enlarged && tiles[0])
		tiles[0].node.focus();
}

document.addEventListener('keydown', (e) => {
	if (e.key === 'Escape' && enlarged) {
		enlarged = null;
		render();
	}
});
setInterval(() => {
	for (const t of tiles)
		t.tick();
}, 1000);

try {
	await startShell('live');
	({ cameras: cams, sites } = await allCameras());
	render();
	if (sites)
		setInterval(refreshSites, 10000);
} catch (err) {
	showError(main, err);
}
