// HTTP access to webd's JSON API: credentials, the CSRF header on state-changing
// requests, redirect to the login page when the session is gone, readable errors.
export class ApiError extends Error {
	constructor(status, message) {
		super(message);
		this.status = status;
	}
}

function cookie(name) {
	for (const part of document.cookie.split(';')) {
		const [k, ...v] = part.trim().split('=');
		if (k === name)
			return decodeURIComponent(v.join('='));
	}
	return '';
}

export function toLogin() {
	const back = location.pathname + location.search;
	location.replace('/login.html' + (back && back !== '/' ? '?next=' + encodeURIComponent(back) : ''));
}

export async function request(method, path, body, { redirect = true } = {}) {
	const headers = { Accept: 'application/json' };
	if (method !== 'GET' && method !== 'HEAD')
		headers['X-KeepPeek-CSRF'] = cookie('kp_csrf');
	let payload;
	if (body !== undefined) {
		headers['Content-Type'] = 'application/json';
		payload = JSON.stringify(body);
	}
	const r = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
	if (r.status === 401 && redirect) {
		toLogin();
		throw new ApiError(401, 'signed out');
	}
	const type = r.headers.get('Content-Type') || '';
	const data = type.includes('json') ? await r.json() : await r.text();
	if (!r.ok) {
		const msg = (data && (data.message || data.error)) || `${method} ${path}: HTTP ${r.status}`;
		throw new ApiError(r.status, typeof msg === 'string' ? msg : JSON.stringify(msg));
	}
	return data;
}

export const get = (path, opts) => request('GET', path, undefined, opts);
export const post = (path, body, opts) => request('POST', path, body, opts);

export function query(params) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(params))
		if (v !== undefined && v !== null && v !== '')
			q.set(k, String(v));
	const s = q.toString();
	return s ? '?' + s : '';
}

export function wsUrl(path) {
	return (location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + path;
}
