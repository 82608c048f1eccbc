// The MSE fallback (docs/decisions/0016-mse-fallback.md) on the live page: Chromium runs
// in a network namespace of its own that reaches keeppeek's web port over TCP and nothing
// else (netns_fwd.mjs), as behind a firewall that lets HTTPS out and no UDP: rtcd's UDP
// candidates lead nowhere and ICE cannot connect. Each
// tile falls back by itself a few seconds after the answer to fragmented MP4 over the
// signaling WebSocket into Media Source Extensions, plays (time advances, frames
// decoded) and says so ("MSE fallback"); rtcd counts MSE sessions and bytes and no
// WebRTC session ever streamed. A camera that sends H.265 only plays too: as H.265 when
// this Chromium's MSE takes the answer's hev1 type, else as the transcoder's H.264, and
// its tile says "Transcoded to H.264" (counted). Screenshot.
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { adminToken, atExit, check, CHROMIUM, DESKTOP, guard, launch, login, shoot, startKeeppeek, waitFor, waitStreaming } from './helpers.mjs';
import { outer, wrapper } from './netns_fwd.mjs';
import { startCamera } from './rtc_helpers.mjs';

async function metric(s, name) {
	const r = await fetch(s.kp.url + '/metrics', { headers: { Authorization: `Bearer ${s.token}` } });
	const line = (await r.text()).split('\n').find((l) => l.startsWith(name + ' '));
	return line ? Number(line.split(' ')[1]) : null;
}

export default async function () {
	const kp = await startKeeppeek({
		config: async (dir, port) => {
			chmodSync(dir, 0o755); // workers drop to an unprivileged user when started as root
			return `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n` +
				(await startCamera(dir, 'cam', 'h264', 'h264')) + (await startCamera(dir, 'h265-only', 'h265', 'h265'));
		},
	});
	const port = Number(new URL(kp.url).port);
	const dir = mkdtempSync(join(tmpdir(), 'kp-netns-'));
	const sock = join(dir, 'web.sock');
	const fwd = await outer(sock, port);
	atExit(() => fwd.close());
	const browser = await launch({ executablePath: wrapper(dir, CHROMIUM, port, sock) });
	const s = { kp, token: await adminToken(kp), page: await browser.newPage(DESKTOP) };
	s.guard = guard(s.page, 'desktop');
	await login(s.page, kp);
	await waitStreaming(s.kp, s.token, 2);
	const { page } = s;
	const t0 = Date.now();
	await page.goto(s.kp.url + '/');
	await page.waitForSelector('.tile', { timeout: 15000 });
	const cam = 'cam';
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

	const hsel = '.tile[data-camera="h265-only"]';
	const hevcMse = await page.evaluate(() => MediaSource.isTypeSupported('video/mp4; codecs="hev1.1.6.L120.90"'));
	await waitFor(() => page.evaluate((q) => {
		const t = document.querySelector(q);
		const v = t && t.querySelector('video');
		return t.dataset.transport === 'mse' && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0;
	}, hsel), 40000, 'the H.265-only camera plays over MSE').catch(async (err) => {
		const said = await page.$eval(hsel, (t) => `${t.querySelector('.badge').textContent} ${t.querySelector('.msg').textContent} ${t.querySelector('.badge.fallback').textContent}`);
		console.error(kp.log().split('\n').filter((l) => /rtcd|webd|transcoder/.test(l)).slice(-40).join('\n'));
		throw new Error(`${err.message} (the tile says: ${said})`);
	});
	const hbadge = await page.$eval(`${hsel} .badge.fallback`, (b) => (b.hidden ? '' : b.textContent));
	const hinfo = await page.textContent(`${hsel} .info`);
	if (hevcMse) {
		check(/H\.?265/i.test(hinfo), `this Chromium's MSE plays H.265: the tile plays it as is ("${hinfo}")`);
	} else {
		check(/Transcoded to H\.264/.test(hbadge), `this Chromium's MSE lacks H.265: the tile says it plays the transcoder's H.264 ("${hbadge}")`);
		check(await metric(s, 'keeppeek_rtc_mse_transcoded_total') >= 1, 'rtcd counts the transcoded MSE session');
	}
	console.log(`     this Chromium's MSE ${hevcMse ? 'plays' : 'does not play'} hev1; the H.265-only tile: "${hbadge}", "${hinfo}"`);
	await shoot(page, 'live-mse-fallback');
	s.guard.assertClean('live page on the MSE fallback');
}
