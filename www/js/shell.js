// The app shell of every signed-in page: session check (to the login page if none),
// top bar with navigation, the signed-in user and sign-out.
import { get, post, toLogin } from './api.js';
import { el } from './format.js';

const PAGES = [
	['live', '/', 'Live'],
	['timeline', '/timeline.html', 'Timeline'],
	['events', '/events.html', 'Events'],
	['recordings', '/recordings.html', 'Recordings'],
	['settings', '/settings.html', 'Settings'],
];

export async function startShell(page) {
	const session = await get('/api/v1/session');
	const nav = el('nav', { class: 'nav', 'aria-label': 'Main' });
	for (const [id, href, label] of PAGES)
		nav.append(el('a', { href, 'aria-current': id === page ? 'page' : null, text: label }));
	const out = el('button', {
		class: 'btn',
		type: 'button',
		text: 'Sign out',
		onclick: async () => {
			try {
				await post('/api/v1/logout', undefined, { redirect: false });
			} finally {
				toLogin();
			}
		},
	});
	const bar = el('header', { class: 'topbar' },
		el('a', { class: 'brand', href: '/' }, el('span', { class: 'brand-mark', 'aria-hidden': 'true', text: 'K' }), el('span', { text: 'KeepPeek' })),
		nav,
		el('div', { class: 'spacer' }),
		el('span', { class: 'who', text: `${session.user} · ${session.role}` }),
		out);
	document.body.prepend(bar);
	return session;
}

// Shows a page-level failure in place of the content.
export function showError(where, err) {
	where.replaceChildren(el('p', { class: 'notice bad', role: 'alert', text: err && err.message ? err.message : String(err) }));
}
