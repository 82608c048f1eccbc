// Login and sign-out against the real supervisor: an unauthenticated visit lands on the
// login page, a wrong password is refused with a message, the right one opens the live
// page, the settings page lists the cameras, sign-out ends the session. Screenshots of
// the login and settings pages (desktop, mobile).
import { startKeeppeek, launch, guard, check, shoot, DESKTOP, MOBILE } from './helpers.mjs';

export default async function () {
	const kp = await startKeeppeek();
	const browser = await launch();
	const page = await browser.newPage(DESKTOP);
	const g = guard(page, 'login');

	let stop = g.allow(/401|Unauthorized/);
	await page.goto(kp.url + '/');
	await page.waitForURL(/\/login\.html/, { timeout: 15000 });
	stop();
	check(true, 'an unauthenticated visit to / goes to the login page');
	await shoot(page, 'login-desktop');

	await page.fill('input[name=user]', kp.user);
	await page.fill('input[name=password]', kp.password + 'x');
	stop = g.allow(/401|Unauthorized|api\/v1\/login/);
	await page.click('button[type=submit]');
	await page.waitForFunction(() => document.getElementById('error').textContent.length > 0, null, { timeout: 15000 });
	stop();
	check(/wrong|password/i.test(await page.textContent('#error')), 'a wrong password shows a message');

	await page.fill('input[name=password]', kp.password);
	await Promise.all([page.waitForURL((u) => u.pathname === '/', { timeout: 15000 }), page.click('button[type=submit]')]);
	await page.waitForSelector('.topbar .who', { timeout: 15000 });
	check((await page.textContent('.topbar .who')).includes(kp.user), 'signed in: the top bar names the user');
	const cookies = await browser.context.cookies(kp.url);
	check(cookies.some((c) => c.httpOnly && c.name !== 'kp_csrf'), 'the session cookie is HttpOnly');
	g.assertClean('the login flow');

	await page.goto(kp.url + '/settings.html');
	await page.waitForSelector('.settings tr[data-camera]', { timeout: 15000 });
	const cams = await page.$$eval('.settings tr[data-camera]', (r) => [...new Set(r.map((x) => x.dataset.camera))]);
	check(cams.length === 2, `the settings page lists the demo cameras (${cams.join(', ')})`);
	await page.waitForFunction(() => [...document.querySelectorAll('.settings td')].some((td) => td.textContent === 'H264'), null, { timeout: 20000 });
	check(true, 'the settings page refreshes and shows the codecs once frames arrive');
	await shoot(page, 'settings-desktop');
	g.assertClean('the settings page');

	const mobile = await browser.newPage(MOBILE);
	const gm = guard(mobile, 'login mobile');
	await mobile.goto(kp.url + '/login.html');
	await shoot(mobile, 'login-mobile');
	await mobile.goto(kp.url + '/settings.html');
	await mobile.waitForSelector('.settings tr[data-camera]', { timeout: 15000 });
	await shoot(mobile, 'settings-mobile');
	gm.assertClean('the mobile login and settings pages');

	stop = g.allow(/401|Unauthorized/);
	await Promise.all([page.waitForURL(/\/login\.html/, { timeout: 15000 }), page.click('text=Sign out')]);
	const r = await page.evaluate(() => fetch('/api/v1/session').then((x) => x.status));
	stop();
	check(r === 401, `after sign-out /api/v1/session answers 401 (${r})`);
	g.assertClean('sign-out');
}
