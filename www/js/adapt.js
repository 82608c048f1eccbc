// The one place that knows the JSON shapes of /api/v1/coverage and /api/v1/events
// (docs/catalog.md, keeppeek-api(7)); pages only see the normalized objects below.
import { get, query } from './api.js';

// Number buckets start at from_ms aligned down to a whole hour (docs/queries.md).
const HOUR_MS = 3600000;

// The answer of GET /api/v1/coverage (recorderd/queries.c, keeppeek-api(7)):
// {from_ms, to_ms, bucket_ms, total_cameras, cameras: [{name, streams: [{name,
//  exact_from_ms (null: nothing exact in the window), ranges: [[start, end]],
//  ranges_truncated, buckets: [covered_ms]}]}]}
// -> {total, from, to, bucket, cameras: [{name, streams: [{name, exactFrom, ranges:
//    [[start, end)], buckets: [{start, covered}]}]}]}
export function normalizeCoverage(j) {
	const from = j.from_ms;
	const first = Math.floor(from / HOUR_MS) * HOUR_MS;
	const cameras = j.cameras.map((c) => ({
		name: c.name,
		streams: c.streams.map((s) => ({
			name: s.name,
			exactFrom: s.exact_from_ms ?? from,
			ranges: s.ranges,
			buckets: s.buckets.map((covered, i) => ({ start: first + i * j.bucket_ms, covered })),
		})),
	}));
	return { total: j.total_cameras, from, to: j.to_ms, bucket: j.bucket_ms, cameras };
}

export async function coverage({ camera, from, to, bucket, offset, limit, stream }) {
	const j = await get('/api/v1/coverage' + query({ camera, stream, from, to, bucket, offset, limit }));
	return normalizeCoverage(j);
}

// The event JSON of docs/queries.md (search answers and the live fan-out render it in
// one place, common/event_json.c, so there is one shape) ->
// {id, revision, camera, stream, start, end, labels: [{name, score}], label,
//  attributes: {}, hasJpeg, hasPicture, source}; hasPicture: a JPEG of its own or a
//  recorded keyframe (its thumbnail and snapshot are made from that, decision 0021)
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
		hasPicture: e.has_jpeg || (e.keyframes || []).length > 0,
		source: e.source,
	};
}

// One event by id.
export async function event(id) {
	return normalizeEvent(await get(`/api/v1/events/${encodeURIComponent(id)}`));
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
