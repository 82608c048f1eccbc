// Settings page: the configured cameras and their streams as the server sees them
// (state, codec, resolution, frame rate, counters, recording state, the last error and,
// for a stream retried on its own, when it is tried again), refreshed every 5 s; the
// configuration with its editor (config-editor.js) and, for admins, users and API tokens
// (users-editor.js).
import { startShell, showError } from './shell.js';
import { cameras as listCameras } from './adapt.js';
import { configEditor } from './config-editor.js';
import { usersEditor } from './users-editor.js';
import { el } from './format.js';

const main = document.getElementById('app');
const STATE = { streaming: 'live', connecting: 'connecting', 'auth-failed': 'error', failed: 'error', retrying: 'error', stopped: 'offline' };

// "camera refused the subStream stream: status 400 · retry 3 in 4 s"
function lastError(s) {
	if (!s.lastError)
		return '—';
	if (s.state !== 'retrying')
		return s.lastError;
	const when = s.retryInMs > 0 ? `in ${Math.ceil(s.retryInMs / 1000)} s` : 'now';
	return `${s.lastError} · retry ${s.retries + 1} ${when}`;
}

function bytes(n) {
	if (!Number.isFinite(n))
		return '—';
	const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
	let i = 0;
	for (; n >= 1024 && i < u.length - 1; i++)
		n /= 1024;
	return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}

function table(cams) {
	const t = el('table', {});
	t.append(el('tr', {}, ...['Camera', 'Stream', 'State', 'Codec', 'Resolution', 'Frame rate', 'Frames', 'Received', 'Reconnects', 'Recording', 'Last error'].map((h) => el('th', { scope: 'col', text: h }))));
	for (const c of cams)
		for (const [i, s] of c.streams.entries())
			t.append(el('tr', { 'data-camera': c.name },
				i === 0 ? el('th', { scope: 'row', rowspan: String(c.streams.length) }, el('a', { href: `/timeline.html?camera=${encodeURIComponent(c.name)}`, text: c.name })) : null,
				el('td', { text: s.name }),
				el('td', {}, el('span', { class: 'badge', 'data-state': STATE[s.state] || 'offline', text: s.state || '—' })),
				el('td', { text: (s.codec || '—').toUpperCase() }),
				el('td', { text: s.width ? `${s.width}×${s.height}` : '—' }),
				el('td', { class: 'num', text: Number.isFinite(s.fps) ? s.fps.toFixed(1) : '—' }),
				el('td', { class: 'num', text: Number.isFinite(s.frames) ? s.frames.toLocaleString() : '—' }),
				el('td', { class: 'num', text: bytes(s.bytes) }),
				el('td', { class: 'num', text: String(s.reconnects ?? '—') }),
				el('td', { text: s.recording || '—' }),
				el('td', { class: 'last-error', text: lastError(s) })));
	return t;
}

async function refresh(box) {
	const cams = await listCameras();
	box.replaceChildren(cams.length ? table(cams) : el('p', { class: 'empty', text: 'No cameras are configured.' }));
}

try {
	const session = await startShell('settings');
	const box = el('div', { class: 'cov settings' });
	const config = el('section', { class: 'cfg', 'aria-label': 'Configuration' });
	main.replaceChildren(
		el('div', { class: 'toolbar' }, el('h1', { text: 'Cameras' })),
		el('div', { class: 'card' }, box),
		el('div', { class: 'toolbar' }, el('h2', { text: 'Configuration' })),
		config);
	await refresh(box);
	await configEditor(config, { admin: session.role === 'admin' });
	if (session.role === 'admin') {
		const users = el('section', { class: 'cfg', 'aria-label': 'Users and API tokens' });
		main.append(el('div', { class: 'toolbar' }, el('h2', { text: 'Users and API tokens' })), users);
		await usersEditor(users);
	}
	setInterval(() => refresh(box).catch((err) => showError(box, err)), 5000);
} catch (err) {
	showError(main, err);
}
