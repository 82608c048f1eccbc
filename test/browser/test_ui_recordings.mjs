// Recordings page against the real supervisor with 27 recording cameras (one RTSP test
// camera, 27 configured cameras reading it): the coverage dashboard shows 25 camera rows
// on the first page and 2 on the second, recorded buckets and gaps, paging both ways.
// Screenshots desktop and mobile.
import { check, shoot, waitFor, startTestCamera } from './helpers.mjs';
import { uiSession } from './session.mjs';

const N = 27;

export default async function () {
	const s = await uiSession({
		async config(dir, port) {
			const cam = await startTestCamera(dir, 'rtsp');
			let c = `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n`;
			for (let i = 0; i < N; i++)
				c += `[camera "cam-${String(i).padStart(2, '0')}"]\nurl = ${cam.url}\n`;
			return c;
		},
	});
	const { page } = s;
	const auth = { headers: { Authorization: `Bearer ${s.token}` } };
	let seen = '';
	await waitFor(async () => {
		const to = Date.now() + 3600000;
		const r = await fetch(`${s.kp.url}/api/v1/coverage?from=${to - 86400000}&to=${to}&bucket=3600000`, auth);
		const j = await r.json();
		const rec = (c, n) => c.streams.find((x) => x.name === n).buckets.reduce((a, b) => a + b, 0);
		seen = `${j.total_cameras} cameras; main ms: ${j.cameras.map((c) => `${c.name}=${rec(c, 'main')}/${rec(c, 'sub')}`).join(' ')}`;
		return j.total_cameras >= N && j.cameras[0].name === 'cam-00' && rec(j.cameras[0], 'main') > 0;
	}, 90000, `${N} cameras in /api/v1/coverage, cam-00 with main-stream recording`).catch((err) => {
		throw new Error(`${err.message} (${seen})`);
	});

	await page.goto(s.kp.url + '/recordings.html');
	await page.waitForSelector('.cov tr[data-camera]', { timeout: 15000 });
	const rows = await page.$$eval('.cov tr[data-camera]', (r) => r.map((x) => x.dataset.camera));
	check(rows.length === 25 && rows[0] === 'cam-00' && rows[24] === 'cam-24', `25 camera rows on the first page (${rows[0]}..${rows[rows.length - 1]})`);
	check((await page.textContent('.pager [role=status]')).includes(`of ${N}`), 'the pager counts every camera');
	const cells = await page.$eval('.cov tr[data-camera] .strip', (st) => ({ n: st.children.length, gaps: st.querySelectorAll('.gap').length, rec: st.querySelectorAll('.cell:not(.gap):not([style*=hidden])').length }));
	check(cells.n === 120, `30 days of 6 h buckets by default (${cells.n} cells)`);
	check(cells.rec >= 1 && cells.gaps >= 100, `recorded buckets and gaps both visible (${cells.rec} recorded, ${cells.gaps} gaps)`);
	await shoot(page, 'recordings-desktop');

	await page.click('text=Next ›');
	await waitFor(async () => (await page.$$eval('.cov tr[data-camera]', (r) => r.map((x) => x.dataset.camera))).join() === 'cam-25,cam-26', 10000, 'page 2 lists cam-25 and cam-26');
	check(await page.isDisabled('text=Next ›'), 'page 2 is the last');
	await page.click('text=‹ Previous');
	await waitFor(async () => (await page.$$('.cov tr[data-camera]')).length === 25, 10000, 'back on page 1');
	check(true, 'paging works both ways');
	s.guard.assertClean('the recordings page');

	const m = await s.mobile();
	await m.page.goto(s.kp.url + '/recordings.html');
	await m.page.waitForSelector('.cov tr[data-camera]', { timeout: 15000 });
	await shoot(m.page, 'recordings-mobile');
	m.guard.assertClean('the mobile recordings page');
}
