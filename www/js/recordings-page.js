// Recordings page: the coverage dashboard, cameras x time buckets over a chosen range
// (default 30 days in 6 h buckets), main and sub streams as two strips per camera, gaps
// striped so they show at a glance, 25 camera rows per page (server-side paging).
import { startShell, showError } from './shell.js';
import { coverage } from './adapt.js';
import { el, shortDate, hm, DAY, HOUR } from './format.js';

const ROWS = 25;
const MAX_BUCKETS = 2048;
const main = document.getElementById('app');
const params = new URLSearchParams(location.search);
let days = +(params.get('days') || 30);
let bucket = +(params.get('bucket') || 6) * HOUR;
let offset = Math.max(0, +(params.get('offset') || 0));
const ui = {};

function strip(s, name, now) {
	const box = el('div', { class: 'strip', role: 'img' });
	let rec = 0;
	let gaps = 0;
	let span = 0;
	for (const b of s.buckets) {
		const len = Math.min(bucket, Math.max(0, now - b.start));
		const c = el('div', { class: 'cell' });
		if (len <= 0) {
			c.style.visibility = 'hidden';
		} else {
			span += len;
			rec += Math.min(b.covered, len);
			const f = b.covered / len;
			if (b.covered <= 0) {
				c.classList.add('gap');
				gaps++;
			} else if (f < 0.99) {
				c.classList.add('part');
			}
			c.title = `${name} ${shortDate(b.start)} ${hm(b.start)}–${hm(b.start + bucket)}: ${Math.round(Math.min(1, f) * 100)} % recorded`;
		}
		box.append(c);
	}
	const pct = span ? Math.round((rec / span) * 1000) / 10 : 0;
	box.setAttribute('aria-label', `${name} stream: ${pct} % recorded, ${gaps} empty buckets`);
	return { box, pct, gaps, any: rec > 0 };
}

async function load() {
	const to = Math.ceil(Date.now() / bucket) * bucket;
	const from = to - days * DAY;
	const q = new URLSearchParams({ days: String(days), bucket: String(bucket / HOUR), offset: String(offset) });
	history.replaceState(null, '', '?' + q);
	ui.body.replaceChildren(el('p', { class: 'empty', text: 'Loading coverage…' }));
	const cov = await coverage({ from, to, bucket, offset, limit: ROWS });
	const now = Date.now();
	const table = el('table', {});
	const head = el('tr', {}, el('th', { scope: 'col', text: 'Camera' }),
		el('td', {}, el('div', { class: 'axis', 'aria-hidden': 'true' }, ...[0, 0.25, 0.5, 0.75, 1].map((f) => el('span', { text: shortDate(from + f * (to - from)) })))),
		el('th', { scope: 'col', class: 'stat', text: 'Recorded' }));
	table.append(head);
	for (const cam of cov.cameras) {
		const cell = el('td', {});
		const stats = [];
		for (const s of cam.streams) {
			const r = strip(s, s.name, now);
			cell.append(r.box);
			stats.push(`${s.name} ${r.pct === 0 && r.any ? '< 0.1' : r.pct} %`);
		}
		table.append(el('tr', { 'data-camera': cam.name },
			el('th', { scope: 'row' }, el('a', { href: `/timeline.html?camera=${encodeURIComponent(cam.name)}`, text: cam.name })),
			cell,
			el('td', { class: 'stat', text: stats.join(' · ') })));
	}
	const total = Math.max(cov.total, offset + cov.cameras.length);
	const last = offset + cov.cameras.length;
	ui.body.replaceChildren(cov.cameras.length ? table : el('p', { class: 'empty', text: 'No cameras on this page.' }));
	ui.range.textContent = total ? `Cameras ${offset + 1}–${last} of ${total}` : 'No cameras';
	ui.prev.disabled = offset === 0;
	ui.next.disabled = last >= total;
}

function build() {
	const range = el('select', { 'aria-label': 'Range' });
	for (const d of [1, 7, 30, 90])
		range.append(el('option', { value: String(d), text: d === 1 ? 'Last 24 hours' : `Last ${d} days`, selected: d === days }));
	const size = el('select', { 'aria-label': 'Bucket size' });
	for (const h of [1, 6, 24])
		size.append(el('option', { value: String(h), text: `${h} h buckets`, selected: h * HOUR === bucket }));
	const reload = () => load().catch((e) => showError(ui.body, e));
	range.addEventListener('change', () => {
		days = +range.value;
		bucket = Math.min(bucket, (days * DAY) / 24);
		if ((days * DAY) / bucket > MAX_BUCKETS)
			bucket = 6 * HOUR;
		size.value = String(bucket / HOUR);
		fit();
		reload();
	});
	// The server answers at most 2,048 buckets.
	const fit = () => {
		for (const o of size.options)
			o.disabled = (days * DAY) / (+o.value * HOUR) > MAX_BUCKETS || +o.value * HOUR > days * DAY;
	};
	fit();
	size.addEventListener('change', () => {
		bucket = +size.value * HOUR;
		reload();
	});
	ui.body = el('div', { class: 'cov' });
	ui.range = el('span', { role: 'status', 'aria-live': 'polite' });
	ui.prev = el('button', { class: 'btn', type: 'button', text: '‹ Previous', onclick: () => { offset = Math.max(0, offset - ROWS); reload(); } });
	ui.next = el('button', { class: 'btn', type: 'button', text: 'Next ›', onclick: () => { offset += ROWS; reload(); } });
	main.replaceChildren(
		el('div', { class: 'toolbar' }, el('h1', { text: 'Recordings' }),
			el('label', { class: 'field' }, 'Range', range), el('label', { class: 'field' }, 'Buckets', size)),
		el('div', { class: 'card' }, ui.body,
			el('div', { class: 'pager' },
				el('span', { class: 'tl-legend' }, el('span', {}, el('i'), 'recorded'), el('span', {}, el('i', { style: 'background:var(--rec-part)' }), 'partly'), el('span', {}, el('i', { class: 'gap' }), 'gap')),
				el('span', { style: 'flex:1' }), ui.range, ui.prev, ui.next)));
	return reload();
}

try {
	await startShell('recordings');
	await build();
} catch (err) {
	showError(main, err);
}
