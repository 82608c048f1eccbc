// The live event feed (/api/v1/live): each {"type":"event","jpeg_follows":true} text
// message is followed by the event's JPEG as one binary message; {"type":"resync"}
// means events were dropped for this subscriber and the page should query again.
// Reconnects with backoff.
import { wsUrl } from './api.js';
import { normalizeEvent } from './adapt.js';

const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000];

export function subscribe({ onEvent, onResync, onStatus }) {
	let ws = null;
	let failures = 0;
	let timer = 0;
	let stopped = false;
	let pending = null;

	function open() {
		ws = new WebSocket(wsUrl('/api/v1/live'));
		ws.binaryType = 'blob';
		ws.onopen = () => {
			if (failures && onResync)
				onResync();
			failures = 0;
			if (onStatus)
				onStatus('live');
		};
		ws.onmessage = (e) => {
			if (typeof e.data !== 'string') {
				if (pending) {
					onEvent(pending, e.data);
					pending = null;
				}
				return;
			}
			let m;
			try {
				m = JSON.parse(e.data);
			} catch {
				return;
			}
			if (pending)
				onEvent(pending, null);
			pending = null;
			if (m.type === 'event' && m.event) {
				const ev = normalizeEvent(m.event);
				if (m.jpeg_follows === false || (m.jpeg_follows === undefined && m.event.has_jpeg === false))
					onEvent(ev, null);
				else
					pending = ev;
			} else if (m.type === 'resync' && onResync) {
				onResync();
			}
		};
		ws.onclose = () => {
			ws = null;
			if (stopped)
				return;
			if (onStatus)
				onStatus('reconnecting');
			timer = setTimeout(open, BACKOFF_MS[Math.min(failures++, BACKOFF_MS.length - 1)]);
		};
	}
	open();
	return () => {
		stopped = true;
		clearTimeout(timer);
		if (ws)
			ws.close();
	};
}
