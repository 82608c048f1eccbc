// Leaving the Live page as a person does, against the demo (demo-baichuan sent as H.264,
// demo-rtsp transcoded from H.265 for a browser without H.265): both tiles play, then the
// Events link is clicked, then Live again, a reload, the browser's Back button, and a
// second page watching the same grid the whole time. Each departure closes the page's
// peer connections and its signaling WebSocket in whatever order the browser picks; rtcd
// must survive every one (it once read a session freed by the first close when the
// second arrived), the second page must keep playing, and no worker may restart.
import { check, waitFor } from './helpers.mjs';
import { uiSession } from './session.mjs';

const VISITS = 5;

async function tilesPlay(page, what) {
	await page.waitForSelector('.tile video', { timeout: 15000 });
	await waitFor(() => page.evaluate(() => {
		const vs = [...document.querySelectorAll('.tile video')];
		return vs.length >= 2 && vs.every((v) => v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0);
	}), 30000, what).catch(async (err) => {
		const said = await page.evaluate(() => [...document.querySelectorAll('.tile')].map((t) => `${t.dataset.camera}: ${t.querySelector('.badge').textContent} ${t.querySelector('.msg').textContent}`).join('; '));
		throw new Error(`${err.message} (tiles say: ${said})`);
	});
}

async function decoded(page) {
	return page.evaluate(() => [...document.querySelectorAll('.tile video')].map((v) => (v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality().totalVideoFrames : 0)));
}

async function rtcdStatus(kp) {
	return JSON.parse(await kp.ctl(['status', '--json'])).workers.find((w) => w.name === 'rtcd');
}

export default async function () {
	const s = await uiSession();
	const { page, kp } = s;
	const rtcd0 = await rtcdStatus(kp);
	const other = await s.browser.newPage(); // a second viewer, on the grid throughout
	await other.goto(kp.url + '/');
	await tilesPlay(other, 'the second page plays both demo cameras');
	const states = await other.evaluate(() => [...document.querySelectorAll('.tile')].map((t) => t.dataset.camera));
	check(states.length === 2, `two tiles on the second page (${states.join(', ')})`);

	for (let i = 1; i <= VISITS; i++) {
		await page.goto(kp.url + '/');
		await tilesPlay(page, `visit ${i}: both tiles play`);
		await page.waitForTimeout(1000 + 700 * i); // the transcode has run a while
		const before = await decoded(other);
		const how = ['the Events link', 'Back', 'a reload', 'the Events link', 'closing the tab'][i - 1];
		if (how === 'the Events link') {
			await page.click('nav a[href$="events.html"]');
			await page.waitForSelector('#app', { timeout: 15000 });
		} else if (how === 'Back') {
			await page.click('nav a[href$="events.html"]');
			await page.goBack();
			await tilesPlay(page, `visit ${i}: both tiles play again after Back`);
			await page.click('nav a[href$="recordings.html"]');
		} else if (how === 'a reload') {
			await page.reload();
			await tilesPlay(page, `visit ${i}: both tiles play again after a reload`);
			await page.click('nav a[href$="events.html"]');
		} else {
			const tab = await page.context().newPage();
			await tab.goto(kp.url + '/');
			await tilesPlay(tab, `visit ${i}: both tiles play in a new tab`);
			await tab.close();
		}
		await page.waitForTimeout(1500); // rtcd sees the closes; the second page keeps decoding
		const after = await decoded(other);
		const st = await rtcdStatus(kp);
		check(st.pid === rtcd0.pid && st.restarts === 0,
			`visit ${i} left by ${how}: rtcd is the same process with 0 restarts (pid ${st.pid}, ${st.restarts} restarts)`);
		check(after.every((n, k) => n > before[k]), `visit ${i}: the second page keeps decoding (${before} -> ${after} frames)`);
	}
	s.guard.assertClean('leaving and returning to the live page');
}
