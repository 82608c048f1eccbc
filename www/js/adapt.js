// The one place that knows the JSON shapes of /api/v1/coverage and /api/v1/events
// (docs/catalog.md, keeppeek-api(7)); pages only see the normalized objects below. On a
// hub (decision 0033) a camera of another site is named SITE/CAMERA and its coverage,
// events and pictures come from the /api/v1/hub/ routes, chosen here by that name.
import { get, query } from './api.js';

// A camera of another site (camera names never hold '/').
const remote = (camera) => !!camera && camera.includes('/');

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
	const j = remote(camera) ? await get('/api/v1/hub/coverage' + query({ camera, stream, from, to, bucket }))
		: await get('/api/v1/coverage' + query({ camera, stream, from, to, bucket, offset, limit }));
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
		site: e.site || '',
	};
}

// One page of a search: {events, cursor} (cursor '' at the end). On a hub a search of
// every camera is the sites' merged search; the hub's own cameras' events are searched
// by choosing one of them.
export async function events({ camera, from, to, label, q, limit, cursor }) {
	const hub = remote(camera) || (!camera && await hubMode());
	const j = await get((hub ? '/api/v1/hub/events' : '/api/v1/events') + query({ camera, from, to, label, q, limit, cursor }));
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
	return normalizeCameras(j);
}

function normalizeCameras(j) {
	return (j.cameras || []).map((c) => ({
		name: c.name,
		site: c.site || '',
		state: c.state,
		streams: (c.streams || []).map((s) => ({
			name: s.name, codec: s.codec, width: s.width, height: s.height, state: s.state, fps: s.fps,
			frames: s.frames, bytes: s.bytes, reconnects: s.reconnects, recording: s.recording ? s.recording.state : '',
			lastError: s.last_error || '', retries: s.retries || 0, retryInMs: s.retry_in_ms || 0,
		})),
	}));
}

// Every site's state on a hub: [{name, state ('up', 'down', 'refused', 'bad_answer',
// 'unknown'), error}].
const normalizeSites = (j) => (j.sites || []).map((s) => ({ name: s.name, state: s.state, error: s.error || '' }));

// Whether this server is a hub, asked once per page (every server answers it).
let isHub;
async function hubMode() {
	if (isHub === undefined)
		isHub = (await get('/api/v1/hub/sites')).hub === true;
	return isHub;
}

// This server's cameras and, on a hub, its sites' (SITE/CAMERA) with each site's state:
// {cameras, sites} (sites null when this server is not a hub).
export async function allCameras() {
	const [own, hub] = await Promise.all([cameras(), hubMode()]);
	if (!hub)
		return { cameras: own, sites: null };
	const j = await get('/api/v1/hub/cameras');
	return { cameras: own.concat(normalizeCameras(j)), sites: normalizeSites(j) };
}

const picture = (id, site, part) => site ? `/api/v1/hub/events/${encodeURIComponent(site)}/${encodeURIComponent(id)}/${part}`
	: `/api/v1/events/${encodeURIComponent(id)}/${part}`;
export const snapshotUrl = (id, site) => picture(id, site, 'snapshot');
export const thumbnailUrl = (id, site) => picture(id, site, 'thumbnail');
// The timeline's hover preview of a camera at ms.
export const previewUrl = (camera, ms) => remote(camera)
	? `/api/v1/hub/cameras/${camera.split('/').map(encodeURIComponent).join('/')}/thumbnail?t=${ms}`
	: `/api/v1/cameras/${encodeURIComponent(camera)}/thumbnail?t=${ms}`;
