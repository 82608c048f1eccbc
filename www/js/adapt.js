// The one place that knows the JSON shapes of /api/v1/coverage and /api/v1/events
// (docs/catalog.md, keeppeek-api(7)); pages only see the normalized objects below.
import { get, query } from './api.js';

const num = (v) => (typeof v === 'string' ? Number(v) : v);

function pair(r) {
	if (Array.isArray(r))
		return [num(r[0]), num(r[1])];
	return [num(r.start_ms ?? r.from_ms ?? r.start ?? r.from), num(r.end_ms ?? r.to_ms ?? r.end ?? r.to)];
}

// Number buckets start at from_ms aligned down to a whole hour (docs/queries.md).
function buckets(list, from, bucket) {
	from = Math.floor(from / 3600000) * 3600000;
	return (list || []).map((b, i) => {
		if (typeof b === 'number')
			return { start: from + i * bucket, covered: b };
		if (Array.isArray(b))
			return { start: num(b[0]), covered: num(b[1]) };
		return { start: num(b.start_ms ?? b.start ?? from + i * bucket), covered: num(b.covered_ms ?? b.covered ?? 0) };
	});
}

// -> {total, from, to, bucket, cameras: [{name, streams: [{name, exactFrom, ranges:
//    [[start, end)], buckets: [{start, covered}]}]}]}
export function normalizeCoverage(j, req) {
	const from = num(j.from_ms ?? j.from ?? req.from);
	const to = num(j.to_ms ?? j.to ?? req.to);
	const bucket = num(j.bucket_ms ?? j.bucket ?? req.bucket);
	const cams = (j.cameras || []).map((c) => {
		let streams = c.streams;
		if (!streams)
			streams = ['main', 'sub'].filter((s) => c[s]).map((s) => ({ name: s, ...c[s] }));
		return {
			name: c.name ?? c.camera,
			streams: streams.map((s) => ({
				name: s.name ?? s.stream,
				exactFrom: num(s.exact_from_ms ?? s.exact_from ?? from),
				ranges: (s.ranges || s.exact_ranges || []).map(pair),
				buckets: buckets(s.buckets, from, bucket),
			})),
		};
	});
	const total = num(j.total ?? j.total_cameras ?? j.cameras_total ?? j.camera_count ?? cams.length);
	return { total, from, to, bucket, cameras: cams };
}

export async function coverage({ camera, from, to, bucket, offset, limit, stream }) {
	const j = await get('/api/v1/coverage' + query({ camera, stream, from, to, bucket, offset, limit }));
	return normalizeCoverage(j, { from, to, bucket });
}

// The event JSON of docs/queries.md (search answers and the live fan-out render it in
// one place, common/event_json.c, so there is one shape) ->
// {id, revision, camera, stream, start, end, labels: [{name, score}], label,
//  attributes: {}, hasJpeg, source}
export function normalizeEvent(e) {
	const labels = e.labels.map((l) => ({ name: l.name, score: l.score }));
	labels.sort((a, b) => b.score - a.score);
	return {
		id: e.id,
		revision: e.revision,
		camera: e.camera,
		stream: e.stream,
		start: e.start_ms,
		end: e.end_ms,
		labels,
		label: labels.length ? labels[0].name : e.source === 'camera' ? 'motion' : 'event',
		attributes: Object.fromEntries(e.attributes.map((a) => [a.key, a.value])),
		hasJpeg: e.has_jpeg,
		source: e.source,
	};
}

// One page of a search: {events, cursor} (cursor '' at the end).
export async function events({ camera, from, to, label, q, limit, cursor }) {
	const j = await get('/api/v1/events' + query({ camera, from, to, label, q, limit, cursor }));
	return { events: j.events.map(normalizeEvent), cursor: j.next_cursor || '' };
}

// Every event of a window (the timeline's day), following cursors up to `max`.
export async function allEvents(params, max = 5000) {
	const out = [];
	let cursor = '';
	do {
		const page = await events({ ...params, limit: 500, cursor });
		out.push(...page.events);
		if (cursor && page.cursor === cursor)
			break;
		cursor = page.cursor;
	} while (cursor && out.length < max);
	return out;
}

export async function cameras() {
	const j = await get('/api/v1/cameras');
	return (j.cameras || []).map((c) => ({
		name: c.name,
		state: c.state,
		streams: (c.streams || []).map((s) => ({
			name: s.name, codec: s.codec, width: s.width, height: s.height, state: s.state, fps: s.fps,
			frames: s.frames, bytes: s.bytes, reconnects: s.reconnects, recording: s.recording ? s.recording.state : '',
			lastError: s.last_error || '', retries: s.retries || 0, retryInMs: s.retry_in_ms || 0,
		})),
	}));
}

export const snapshotUrl = (id) => `/api/v1/events/${encodeURIComponent(id)}/snapshot`;
export const thumbnailUrl = (id) => `/api/v1/events/${encodeURIComponent(id)}/thumbnail`;
