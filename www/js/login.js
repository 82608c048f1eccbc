// Login page: POST /api/v1/login, then back to the page the user came from.
import { post } from './api.js';

const form = document.getElementById('login');
const error = document.getElementById('error');

function next() {
	const n = new URLSearchParams(location.search).get('next') || '/';
	return n.startsWith('/') && !n.startsWith('//') ? n : '/';
}

form.addEventListener('submit', async (e) => {
	e.preventDefault();
	error.textContent = '';
	const button = form.querySelector('button');
	button.disabled = true;
	try {
		await post('/api/v1/login', { user: form.user.value, password: form.password.value }, { redirect: false });
		location.replace(next());
	} catch (err) {
		error.textContent = err.status === 401 || err.status === 403 ? 'Wrong user name or password.' : err.status === 429 ? 'Too many attempts; wait a moment and try again.' : err.message;
		form.password.select();
	} finally {
		button.disabled = false;
	}
});
