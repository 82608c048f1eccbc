// Settings page, a camera whose sub stream fails alone (issue 13 item 2): an RTSP test
// camera whose sub_url answers 404. The main row shows streaming, the sub row shows
// `retrying` with the camera's reason and when it is tried again, and the page refreshes
// it. Screenshot desktop.
import { check, shoot, waitFor, startTestCamera } from './helpers.mjs';
import { uiSession } from './session.mjs';

export default async function () {
	const s = await uiSession({
		async config(dir, port) {
			const cam = await startTestCamera(dir, 'rtsp');
			return `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n` +
				`[camera "half"]\nurl = ${cam.url}\nsub_url = ${cam.subUrl.replace(/\/sub$/, '/nosuch')}\n`;
		},
	});
	const { page } = s;
	await page.goto(s.kp.url + '/settings.html');
	await page.waitForSelector('.settings tr[data-camera]', { timeout: 15000 });
	const rows = async () => page.$$eval('.settings tr[data-camera]', (r) => r.map((x) => ({
		stream: x.querySelector('td').textContent,
		state: x.querySelector('.badge').textContent,
		error: x.querySelector('.last-error').textContent,
	})));
	let seen = [];
	await waitFor(async () => {
		seen = await rows();
		const main = seen.find((r) => r.stream === 'main'), sub = seen.find((r) => r.stream === 'sub');
		return main && sub && main.state === 'streaming' && sub.state === 'retrying' && /404/.test(sub.error) && /retry \d+ (in \d+ s|now)/.test(sub.error);
	}, 30000, 'main streaming, sub retrying with its error and the next retry').catch((err) => {
		throw new Error(`${err.message} (${JSON.stringify(seen)})`);
	});
	check(true, `sub row: ${seen.find((r) => r.stream === 'sub').error}`);
	await shoot(page, 'settings-stream-retrying');
	s.guard.assertClean('the settings page');
}
