// Users and API tokens on the Settings page, for admins (keeppeek-api(7)): the users with
// their roles (add, change the role, new password, delete) and the tokens (create with a role — the token
// is shown once —, revoke). The supervisor runs each change; this page never keeps a
// password or a token after showing it.
import { get, request, post } from './api.js';
import { el } from './format.js';

export async function usersEditor(box) {
	const status = el('p', { class: 'notice', role: 'status', text: '' });
	const say = (text, bad = false) => {
		status.textContent = text;
		status.classList.toggle('bad', bad);
	};
	// Runs one change; the form that asked for it is cleared when it worked.
	const act = async (fn, form) => {
		try {
			const r = await fn();
			say(r && r.message ? r.message : 'Done.');
			if (form)
				form.reset();
			await render();
		} catch (err) {
			say(err.message, true);
		}
	};

	function userRow(u) {
		const pw = el('input', { type: 'password', name: 'new-password', autocomplete: 'new-password', 'aria-label': `New password for ${u.name}`, minlength: '8' });
		const role = el('select', { 'aria-label': `Role of ${u.name}` }, ...['viewer', 'admin'].map((r) => el('option', { value: r, text: r, selected: r === u.role })));
		role.addEventListener('change', () => act(() => post(`/api/v1/users/${encodeURIComponent(u.name)}/role`, { role: role.value })));
		return el('tr', { 'data-user': u.name },
			el('th', { scope: 'row', text: u.name }),
			el('td', {}, role),
			el('td', {}, el('form', {
				class: 'cfg-inline', onsubmit: (e) => {
					e.preventDefault();
					act(() => post(`/api/v1/users/${encodeURIComponent(u.name)}/password`, { password: pw.value }), e.target);
				},
			}, pw, el('button', { class: 'btn', type: 'submit', text: 'Set password' }))),
			el('td', {}, el('button', { class: 'btn', type: 'button', text: 'Delete', 'aria-label': `Delete user ${u.name}`, onclick: () => act(() => request('DELETE', `/api/v1/users/${encodeURIComponent(u.name)}`)) })));
	}

	function tokenRow(t) {
		return el('tr', { 'data-token': t.name },
			el('th', { scope: 'row', text: t.name }),
			el('td', { text: t.role }),
			el('td', { text: new Date(t.created_ms).toISOString().replace('T', ' ').slice(0, 19) }),
			el('td', {}, el('button', { class: 'btn', type: 'button', text: 'Revoke', 'aria-label': `Revoke token ${t.name}`, onclick: () => act(() => request('DELETE', `/api/v1/tokens/${encodeURIComponent(t.name)}`)) })));
	}

	const addUser = el('form', {
		class: 'card cfg-form', 'aria-label': 'Add a user',
		onsubmit: (e) => {
			e.preventDefault();
			const f = e.target;
			act(() => post('/api/v1/users', { name: f.user.value.trim(), role: f.role.value, password: f.password.value }), f);
		},
	}, el('h3', { text: 'Add a user' }), el('div', { class: 'toolbar' },
		el('label', { class: 'field' }, 'Name', el('input', { name: 'user', required: true, autocomplete: 'off' })),
		el('label', { class: 'field' }, 'Role', el('select', { name: 'role' }, el('option', { value: 'viewer', text: 'viewer' }), el('option', { value: 'admin', text: 'admin' }))),
		el('label', { class: 'field' }, 'Password', el('input', { name: 'password', type: 'password', required: true, minlength: '8', autocomplete: 'new-password' })),
		el('button', { class: 'btn primary', type: 'submit', text: 'Add user' })));

	const shown = el('p', { class: 'notice cfg-token', hidden: true });
	const addToken = el('form', {
		class: 'card cfg-form', 'aria-label': 'Create an API token',
		onsubmit: async (e) => {
			e.preventDefault();
			const f = e.target;
			try {
				const t = await post('/api/v1/tokens', { name: f.token.value.trim(), role: f.role.value });
				f.reset();
				await render();
				shown.replaceChildren('Token ', el('code', { text: t.token }), ` (${t.role}): copy it now, it is not shown again.`);
				shown.hidden = false;
				say(`Token ${t.name} created.`);
			} catch (err) {
				say(err.message, true);
			}
		},
	}, el('h3', { text: 'Create an API token' }), el('div', { class: 'toolbar' },
		el('label', { class: 'field' }, 'Name', el('input', { name: 'token', required: true, autocomplete: 'off', placeholder: 'detector' })),
		el('label', { class: 'field' }, 'Role', el('select', { name: 'role' }, ...['publisher', 'viewer', 'admin'].map((r) => el('option', { value: r, text: r })))),
		el('button', { class: 'btn primary', type: 'submit', text: 'Create token' })));

	async function render() {
		const [{ users }, { tokens }] = await Promise.all([get('/api/v1/users'), get('/api/v1/tokens')]);
		shown.hidden = true;
		box.replaceChildren(
			el('div', { class: 'card cov' }, el('table', { class: 'cfg-table', 'aria-label': 'Users' },
				el('tr', {}, ...['User', 'Role', '', ''].map((h) => el('th', { scope: 'col', text: h }))), ...users.map(userRow))),
			addUser,
			el('div', { class: 'card cov' }, el('table', { class: 'cfg-table', 'aria-label': 'API tokens' },
				el('tr', {}, ...['Token', 'Role', 'Created (UTC)', ''].map((h) => el('th', { scope: 'col', text: h }))), ...tokens.map(tokenRow))),
			addToken, shown, status);
	}

	await render();
}
