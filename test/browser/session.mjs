// Setup shared by the browser tests that run against the real supervisor: keeppeekd
// (demo), chromium (opts.browser: launch's options), an admin API token, and one signed-in
// page per viewport.
import { startKeeppeek, launch, adminToken, login, guard, DESKTOP, MOBILE } from './helpers.mjs';

export async function uiSession(opts) {
	const kp = await startKeeppeek(opts);
	const browser = await launch(opts && opts.browser);
	const token = await adminToken(kp);
	const page = await browser.newPage(DESKTOP);
	const g = guard(page, 'desktop');
	await login(page, kp);
	g.assertClean('login');
	return {
		kp, browser, token, page, guard: g,
		async mobile() {
			const m = await browser.newPage(MOBILE);
			return { page: m, guard: guard(m, 'mobile') };
		},
	};
}
