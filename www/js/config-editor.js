// The configuration part of the Settings page: every camera's configured values (from
// GET /api/v1/config, secrets redacted by the server), and for admins the three changes
// keeppeekctl offers, made the same way (keeppeek-api(7)): fields set on the selected
// cameras, a camera added (by URL, or from the cameras found on the network), a camera
// removed. Each change is first a plan whose
// difference is shown; nothing is written until Apply. Viewers get the table only.
import { get, post } from './api.js';
import { el } from './format.js';

const COLUMNS = ['url', 'streams', 'record', 'retention_days', 'motion_events', 'labels'];
const MAX_FIELDS = 5; // KP_PLAN_MAX_FIELDS

async function allCameras() {
	const out = [];
	let offset = 0;
	for (;;) {
		const page = await get(`/api/v1/config?offset=${offset}`);
		out.push(...page.cameras);
		if (page.next_offset === null || page.next_offset === undefined)
			return { file: page.file, cameras: out };
		offset = page.next_offset;
	}
}

// An input for one key's value, from its description in /api/v1/config/keys.
function valueInput(key, name) {
	const label = `Value of ${key.name}`;
	if (key.type === 'choice' || key.type === 'boolean') {
		const values = key.type === 'choice' ? key.values : ['yes', 'no'];
		return el('select', { name, 'aria-label': label }, ...values.map((v) => el('option', { value: v, text: v, selected: v === key.default })));
	}
	if (key.type === 'integer')
		return el('input', { name, type: 'number', min: String(key.min), max: String(key.max), value: key.default ?? '', 'aria-label': label, required: true });
	return el('input', { name, type: 'text', value: key.default ?? '', 'aria-label': label, placeholder: key.doc });
}

function fieldRow(keys, onRemove) {
	const row = el('div', { class: 'cfg-field' });
	const keySelect = el('select', { name: 'key', 'aria-label': 'Field' }, ...keys.map((k) => el('option', { value: k.name, text: k.name })));
	const holder = el('span', {});
	const update = () => holder.replaceChildren(valueInput(keys.find((k) => k.name === keySelect.value), 'value'));
	keySelect.addEventListener('change', update);
	update();
	row.append(el('label', { class: 'field' }, 'Field', keySelect), el('label', { class: 'field' }, 'Value', holder),
		el('button', { class: 'btn', type: 'button', text: 'Remove field', onclick: () => onRemove(row) }));
	return row;
}

export async function configEditor(box, { admin }) {
	const keys = (await get('/api/v1/config/keys')).keys.filter((k) => k.section === 'camera');
	const status = el('p', { class: 'notice', role: 'status', text: '' });
	const planBox = el('div', { class: 'cfg-plan', hidden: true });
	let selected = new Set();

	async function propose(body, what) {
		status.textContent = `Checking ${what}…`;
		status.classList.remove('bad');
		let plan;
		try {
			plan = await post('/api/v1/config/plan', body);
		} catch (err) {
			status.textContent = err.message;
			status.classList.add('bad');
			return;
		}
		status.textContent = `${what}: ${plan.changes.length} change${plan.changes.length === 1 ? '' : 's'}. Nothing is written until you apply.`;
		const apply = el('button', { class: 'btn primary', type: 'button', text: 'Apply' });
		const cancel = el('button', { class: 'btn', type: 'button', text: 'Cancel', onclick: () => (planBox.hidden = true) });
		apply.addEventListener('click', async () => {
			apply.disabled = true;
			try {
				await post('/api/v1/config/apply', { plan: plan.plan });
				status.textContent = `Applied: ${what}.`;
				planBox.hidden = true;
				selected = new Set();
				await render();
			} catch (err) {
				status.textContent = err.message;
				status.classList.add('bad');
				apply.disabled = false;
			}
		});
		planBox.replaceChildren(el('h3', { text: 'Planned changes' }),
			el('ul', { class: 'cfg-diff' }, ...plan.changes.map((c) => el('li', { text: c }))),
			el('div', { class: 'toolbar' }, apply, cancel));
		planBox.hidden = false;
	}

	function editForm() {
		const fields = el('div', { class: 'cfg-fields' });
		const add = el('button', { class: 'btn', type: 'button', text: 'Add field' });
		const remove = (row) => {
			row.remove();
			add.disabled = fields.children.length >= MAX_FIELDS;
		};
		add.addEventListener('click', () => {
			fields.append(fieldRow(keys.filter((k) => k.name !== 'url'), remove));
			add.disabled = fields.children.length >= MAX_FIELDS;
		});
		fields.append(fieldRow(keys.filter((k) => k.name !== 'url'), remove));
		const plan = el('button', { class: 'btn primary', type: 'submit', text: 'Plan changes' });
		return el('form', {
			class: 'card cfg-form', 'aria-label': 'Change the selected cameras',
			onsubmit: (e) => {
				e.preventDefault();
				if (!selected.size) {
					status.textContent = 'Select the cameras to change first.';
					return;
				}
				const set = {};
				for (const row of fields.children)
					set[row.querySelector('[name=key]').value] = row.querySelector('[name=value]').value;
				propose({ cameras: [...selected].join(','), set }, `${Object.keys(set).join(', ')} on ${selected.size} camera${selected.size === 1 ? '' : 's'}`);
			},
		}, el('h3', { text: 'Change the selected cameras' }), fields, el('div', { class: 'toolbar' }, add, plan));
	}

	// Connects to the URL and waits for a keyframe (at most 10 s); nothing is saved.
	async function tryUrl(form) {
		status.classList.remove('bad');
		status.textContent = 'Connecting to the camera…';
		try {
			const r = await post('/api/v1/config/test', { url: form.url.value.trim() });
			status.textContent = r.ok ? `The camera answers: ${r.codec.toUpperCase()} ${r.width}×${r.height}, first keyframe after ${r.elapsed_ms} ms.`
				: `The camera does not answer: ${r.auth_failed ? 'it refused the credentials: ' : ''}${r.reason}`;
			status.classList.toggle('bad', !r.ok);
		} catch (err) {
			status.textContent = err.message;
			status.classList.add('bad');
		}
	}

	// Cameras on the local segments (about 3 s): each offers its URL to start from.
	async function find(list, form) {
		list.replaceChildren(el('li', { text: 'Looking for cameras on the network…' }));
		try {
			const { cameras } = await get('/api/v1/config/discover');
			if (!cameras.length) {
				list.replaceChildren(el('li', { text: 'No camera answered.' }));
				return;
			}
			list.replaceChildren(...cameras.map((c) => {
				const what = c.kind === 'baichuan' ? `Reolink ${c.uid}` : `ONVIF ${[c.name, c.model].filter(Boolean).join(' / ') || c.xaddr}`;
				const use = el('button', { class: 'btn', type: 'button', text: 'Use', 'aria-label': `Use ${what} at ${c.address}` });
				use.addEventListener('click', () => {
					form.url.value = c.url;
					if (!form.name.value)
						form.name.value = (c.kind === 'baichuan' ? `reolink-${c.uid.slice(-4)}` : `onvif-${c.address.split('.').pop()}`).toLowerCase();
					form.url.focus();
				});
				return el('li', { 'data-found': c.kind }, `${what} at ${c.address} `, use);
			}));
		} catch (err) {
			list.replaceChildren(el('li', { class: 'bad', text: err.message }));
		}
	}

	function addForm() {
		const streams = keys.find((k) => k.name === 'streams');
		const found = el('ul', { class: 'cfg-found', 'aria-label': 'Cameras found on the network' });
		const form = el('form', {
			class: 'card cfg-form', 'aria-label': 'Add a camera',
			onsubmit: (e) => {
				e.preventDefault();
				const f = e.target;
				propose({ add: f.name.value.trim(), url: f.url.value.trim(), set: { streams: f.streams.value } }, `add camera ${f.name.value.trim()}`);
			},
		}, el('h3', { text: 'Add a camera' }),
		el('div', { class: 'toolbar' },
			el('label', { class: 'field' }, 'Name', el('input', { name: 'name', required: true, pattern: '[A-Za-z0-9_\\-]{1,64}', placeholder: 'front-door' })),
			el('label', { class: 'field cfg-url' }, 'URL', el('input', { name: 'url', required: true, placeholder: 'rtsp://user:${CAM_PASSWORD}@192.0.2.10/main' })),
			el('label', { class: 'field' }, 'Streams', el('select', { name: 'streams' }, ...['main, sub', 'main', 'sub'].map((v) => el('option', { value: v, text: v, selected: v === streams.default })))),
			el('button', { class: 'btn primary', type: 'submit', text: 'Plan' }),
			el('button', { class: 'btn', type: 'button', text: 'Test connection', onclick: () => tryUrl(form) }),
			el('button', { class: 'btn', type: 'button', text: 'Find cameras', onclick: () => find(found, form) })),
		found,
		el('p', { class: 'notice', text: 'Write a password as ${NAME}, an environment variable of the service, or file:PATH: plans and pages never show it.' }));
		return form;
	}

	function table(cams) {
		const t = el('table', { class: 'cfg-table' });
		t.append(el('tr', {}, admin ? el('th', { scope: 'col', text: '' }) : null, el('th', { scope: 'col', text: 'Camera' }),
			...COLUMNS.map((c) => el('th', { scope: 'col', text: c })), admin ? el('th', { scope: 'col', text: '' }) : null));
		for (const c of cams) {
			const box = admin ? el('input', { type: 'checkbox', 'aria-label': `Select ${c.name}`, checked: selected.has(c.name) }) : null;
			if (box)
				box.addEventListener('change', () => (box.checked ? selected.add(c.name) : selected.delete(c.name)));
			t.append(el('tr', { 'data-camera': c.name },
				admin ? el('td', {}, box) : null,
				el('th', { scope: 'row', text: c.name }),
				...COLUMNS.map((k) => el('td', { 'data-key': k, text: c.values[k] ?? '' })),
				admin ? el('td', {}, el('button', { class: 'btn', type: 'button', text: 'Remove', 'aria-label': `Remove ${c.name}`, onclick: () => propose({ remove: c.name }, `remove camera ${c.name}`) })) : null));
		}
		return t;
	}

	async function render() {
		const { file, cameras } = await allCameras();
		const parts = [el('div', { class: 'card cov' }, table(cameras))];
		if (admin && file)
			parts.push(editForm(), addForm(), planBox, status);
		else if (admin)
			parts.push(el('p', { class: 'notice', text: 'keeppeekd runs without a configuration file (demo): there is nothing to change.' }));
		else
			parts.push(el('p', { class: 'notice', text: 'Only admins change the configuration.' }));
		box.replaceChildren(...parts);
	}

	await render();
}
