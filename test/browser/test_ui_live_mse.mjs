// The MSE fallback (docs/decisions/0016-mse-fallback.md) on the live page: Chromium runs
// in a network namespace of its own that reaches keeppeek's web port over TCP and nothing
// else (netns_fwd.mjs), as behind a firewall that lets HTTPS out and no UDP: rtcd's UDP
// candidates lead nowhere and ICE cannot connect. Each
// tile falls back by itself a few seconds after the answer to fragmented MP4 over the
// signaling WebSocket into Media Source Extensions, plays (time advances, frames
// decoded) and says so ("MSE fallback"); rtcd counts MSE sessions and bytes and no
// WebRTC session ever streamed. Screenshot.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminToken, atExit, check, CHROMIUM, DESKTOP, guard, launch, login, shoot, startKeeppeek, waitFor, waitStreaming } from './helpers.mjs';
import { outer, wrapper } from './netns_fwd.mjs';

async function metric(s, name) {
	const r = await fetch(s.kp.url + '/metrics', { headers: { Authorization: `Bearer ${s.token}` } });
	const line = (await r.text()).split('\n').find((l) => l.startsWith(name + ' '));
	return line ? Number(line.split(' ')[1]) : null;
}

export default async function () {
	const kp = await startKeeppeek();
	const port = Number(new URL(kp.url).port);
	const dir = mkdtempSync(join(tmpdir(), 'kp-netns-'));
	const sock = join(dir, 'web.sock');
	const fwd = await outer(sock, port);
	atExit(() => fwd.close());
	const browser = await launch({ executablePath: wrapper(dir, CHROMIUM, port, sock) });
	const s = { kp, token: await adminToken(kp), page: await browser.newPage(DESKTOP) };
	s.guard = guard(s.page, 'desktop');
	await login(s.page, kp);
	const cams = await waitStreaming(s.kp, s.token, 2);
	const { page } = s;
	const t0 = Date.now();
	await page.goto(s.kp.url + '/');
	await page.waitForSelector('.tile', { timeout: 15000 });
	const cam = cams[0].name || (await page.$eval('.tile', (t) => t.dataset.camera));
	const sel = `.tile[data-camera="${cam}"]`;
	await page.evaluate((q) => {
		const m = document.querySelector(q + ' .msg');
		window.said = [];
		new MutationObserver(() => window.said.push(m.textContent)).observe(m, { childList: true, characterData: true, subtree: true });
	}, sel);
	await waitFor(() => page.evaluate((q) => {
		const t = document.querySelector(q);
		const v = t && t.querySelector('video');
		return t.dataset.transport === 'mse' && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}, sel), 30000, `${cam} plays over MSE`).catch(async (err) => {
		console.error('the tile said: ' + (await page.evaluate(() => window.said.join(' | '))));
		console.error('its video: ' + (await page.evaluate((q) => {
			const v = document.querySelector(q + ' video');
			const b = [];
			for (let i = 0; i < v.buffered.length; i++)
				b.push(`${v.buffered.start(i).toFixed(2)}-${v.buffered.end(i).toFixed(2)}`);
			return `t=${v.currentTime} ready=${v.readyState} paused=${v.paused} ${v.videoWidth}x${v.videoHeight} buffered ${b.join(',')} error ${v.error && v.error.message}`;
		}, sel)));
		const said = await page.evaluate(() => [...document.querySelectorAll('.tile')].map((t) => `${t.dataset.camera} [${t.dataset.transport}]: ${t.querySelector('.badge').textContent} ${t.querySelector('.msg').textContent}`).join('; '));
		console.error(kp.log().split('\n').filter((l) => /rtcd|webd/.test(l)).slice(-40).join('\n'));
		throw new Error(`${err.message} (tiles say: ${said})`);
	});
	const after = (Date.now() - t0) / 1000;
	check(after < 15, `the tile fell back to MSE and played ${after.toFixed(1)} s after the page opened`);
	const q0 = await page.$eval(`${sel} video`, (v) => ({ t: v.currentTime, f: v.getVideoPlaybackQuality().totalVideoFrames, src: v.src, obj: !!v.srcObject }));
	await page.waitForTimeout(2000);
	const q1 = await page.$eval(`${sel} video`, (v) => ({ t: v.currentTime, f: v.getVideoPlaybackQuality().totalVideoFrames, w: v.videoWidth }));
	check(q0.src.startsWith('blob:') && !q0.obj, `the video plays a MediaSource, not a WebRTC stream (${q0.src})`);
	check(q1.t > q0.t + 1 && q1.f > q0.f, `MSE video time advances ${q0.t.toFixed(2)} -> ${q1.t.toFixed(2)} s, frames decoded ${q0.f} -> ${q1.f} (${q1.w} px wide)`);
	const badge = await page.$eval(`${sel} .badge.fallback`, (b) => (b.hidden ? '' : b.textContent));
	check(/MSE/.test(badge), `the tile says it plays over the MSE fallback ("${badge}")`);
	check(/MSE/.test(await page.textContent(`${sel} .info`)), 'the tile\'s stream line says MSE');
	check(await page.$eval(`${sel} .badge`, (b) => b.dataset.state) === 'live', 'the tile says Live');
	check(await metric(s, 'keeppeek_rtc_mse_sessions') >= 1, 'rtcd counts the MSE sessions');
	check(await metric(s, 'keeppeek_rtc_mse_bytes_total') > 100000, 'rtcd counts MSE bytes');
	check(await metric(s, 'keeppeek_rtc_sessions_state{state="streaming"}') === 0, 'no WebRTC session reached streaming: ICE really failed');
	await shoot(page, 'live-mse-fallback');
	s.guard.assertClean('live page on the MSE fallback');
}
