// Sound in real Chromium: an RTSP test camera whose main stream carries Opus (RFC 7587,
// the 440 Hz tone of audio.opus; Axis cameras send Opus over RTSP), one whose main stream
// carries AAC (RFC 3640, made Opus by the transcoder process) and a camera without
// sound.
// * Signaling page (rtc_helpers): a live session with an audio transceiver receives audio
//   (getStats inbound-rtp kind audio: packetsReceived and totalSamplesReceived growing;
//   Chromium reports audioLevel 0 for a muted element, so the tone is heard through
//   WebAudio below); a playback session too, none while paused, again after
//   play and after a seek, none at 2x.
// * Live page: the tile of the camera with sound has a sound toggle, muted by default;
//   WebAudio on the tile's stream hears the tone; the toggle unmutes and mutes the
//   <video>; the AAC camera's tile has a toggle and WebAudio hears its tone; the silent
//   camera's tile has no toggle.
// * Timeline page: the player has the toggle once playback runs, muted by default, and it
//   unmutes the <video>.
import { check, waitFor } from './helpers.mjs';
import { rtcSetup, waitLive, withLog } from './rtc_helpers.mjs';

const SILENCE = 0.01; // WebAudio peak: the tone is about 0.125 full scale

async function audioGrows(page, sid, ms = 4000) {
	const a = await page.evaluate((s) => window.kp.audioStats(s), sid);
	await page.waitForTimeout(ms);
	const b = await page.evaluate((s) => window.kp.audioStats(s), sid);
	return { grew: b.packetsReceived > a.packetsReceived + 10 && b.totalSamplesReceived > a.totalSamplesReceived, a, b };
}

// Peak of the <video>'s audio track through WebAudio over about a second.
function webAudioPeak(page, selector) {
	return page.evaluate(async (sel) => {
		const v = document.querySelector(sel);
		const ctx = new AudioContext();
		await ctx.resume();
		const src = ctx.createMediaStreamSource(v.srcObject);
		const an = ctx.createAnalyser();
		an.fftSize = 2048;
		src.connect(an);
		const buf = new Float32Array(an.fftSize);
		let peak = 0;
		for (let i = 0; i < 20; i++) {
			await new Promise((ok) => setTimeout(ok, 50));
			an.getFloatTimeDomainData(buf);
			for (const x of buf)
				peak = Math.max(peak, Math.abs(x));
		}
		await ctx.close();
		return peak;
	}, selector);
}

export default async function () {
	await withLog(async (keep) => {
		const { kp, page } = await rtcSetup([
			{ name: 'tone', main: 'h264', sub: 'h264', audio: 'audio.opus' },
			{ name: 'quiet', main: 'h264', sub: 'h264' },
			{ name: 'aac', main: 'h264', sub: 'h264', audio: 'audio.aac' },
		]);
		keep(kp);
		await waitLive(page, 'tone');
		await waitLive(page, 'quiet');
		await waitLive(page, 'aac');
		const recStart = Date.now();

		await page.evaluate(() => window.kp.watch('live-a', { camera: 'tone', stream: 'sub' }, true));
		check((await page.evaluate(() => window.kp.plays('live-a', 5000))).ok, 'live video plays with an audio transceiver');
		const live = await audioGrows(page, 'live-a');
		check(live.grew, `live audio arrives and decodes: ${JSON.stringify(live)}`);

		await page.waitForTimeout(8000); // something recorded to play back
		await page.evaluate((t) => window.kp.watch('pb-a', { camera: 'tone', mode: 'playback', at_ms: t }, true), recStart + 2000);
		check((await page.evaluate(() => window.kp.plays('pb-a', 5000))).ok, 'playback video plays');
		const pb = await audioGrows(page, 'pb-a');
		check(pb.grew, `playback audio arrives and decodes: ${JSON.stringify(pb)}`);
		await page.evaluate(() => window.kp.control('pb-a', { op: 'pause' }));
		await page.waitForTimeout(800);
		const paused = await audioGrows(page, 'pb-a', 2000);
		check(paused.b.packetsReceived === paused.a.packetsReceived, `no audio while paused: ${JSON.stringify(paused)}`);
		await page.evaluate(() => window.kp.control('pb-a', { op: 'play' }));
		check((await audioGrows(page, 'pb-a', 3000)).grew, 'audio again after play');
		await page.evaluate((t) => window.kp.control('pb-a', { op: 'seek', at_ms: t }), recStart + 4000);
		check((await audioGrows(page, 'pb-a', 4000)).grew, 'audio after a seek');
		await page.evaluate(() => window.kp.control('pb-a', { op: 'rate', rate: 2 }));
		await page.waitForTimeout(800);
		const fast = await audioGrows(page, 'pb-a', 2000);
		check(fast.b.packetsReceived === fast.a.packetsReceived, `no audio at 2x: ${JSON.stringify(fast)}`);

		// Live page: the tile's sound toggle.
		await page.goto(kp.url + '/');
		const tone = '.tile[data-camera="tone"]';
		await page.waitForSelector(`${tone} .btn.sound:not([hidden])`, { timeout: 20000 });
		await waitFor(() => page.$eval(`${tone} video`, (v) => v.currentTime > 0), 20000, 'the tone tile plays');
		check(await page.$eval(`${tone} video`, (v) => v.muted), 'a grid tile is muted by default');
		check(await page.getAttribute(`${tone} .btn.sound`, 'aria-pressed') === 'false', 'the toggle says muted');
		check(await page.$eval(`${tone} video`, (v) => v.srcObject.getAudioTracks().length === 1), 'the tile receives an audio track');
		const peak = await webAudioPeak(page, `${tone} video`);
		check(peak > SILENCE, `WebAudio hears the tone on the tile's stream (peak ${peak.toFixed(3)})`);
		await page.click(`${tone} .btn.sound`);
		check(!(await page.$eval(`${tone} video`, (v) => v.muted)), 'the toggle unmutes the tile');
		check(!(await page.$('.live-enlarged')), 'the toggle does not enlarge the tile');
		check(await page.getAttribute(`${tone} .btn.sound`, 'aria-pressed') === 'true', 'the toggle says sound on');
		await page.click(`${tone} .btn.sound`);
		check(await page.$eval(`${tone} video`, (v) => v.muted), 'the toggle mutes the tile again');
		await waitFor(() => page.$eval('.tile[data-camera="quiet"] video', (v) => v.currentTime > 0), 20000, 'the quiet tile plays');
		check(await page.$eval('.tile[data-camera="quiet"] .btn.sound', (b) => b.hidden), 'a camera without sound has no toggle');
		const aac = '.tile[data-camera="aac"]';
		await page.waitForSelector(`${aac} .btn.sound:not([hidden])`, { timeout: 20000 });
		await waitFor(() => page.$eval(`${aac} video`, (v) => v.currentTime > 0), 20000, 'the AAC tile plays');
		const aacPeak = await webAudioPeak(page, `${aac} video`);
		check(aacPeak > SILENCE, `WebAudio hears the AAC camera's tone, made Opus by the transcoder (peak ${aacPeak.toFixed(3)})`);

		// Timeline player.
		const at = recStart + 3000;
		await page.goto(`${kp.url}/timeline.html?camera=tone&t=${at}`);
		await page.waitForSelector('.tl [data-prim=range]', { timeout: 15000 });
		const box = await page.$eval('.tl', (t) => { const r = t.getBoundingClientRect(); return { x: r.left, y: r.top, w: r.width, h: r.height }; });
		await page.mouse.click(box.x + box.w / 2, box.y + box.h / 2);
		await page.waitForSelector('.player ~ * .btn.sound:not([hidden]), .btn.sound:not([hidden])', { timeout: 20000 });
		await waitFor(() => page.$eval('.player video', (v) => v.currentTime > 0), 20000, 'timeline playback plays');
		check(await page.$eval('.player video', (v) => v.muted), 'the player is muted by default');
		const pPeak = await webAudioPeak(page, '.player video');
		check(pPeak > SILENCE, `WebAudio hears the recorded tone in the player (peak ${pPeak.toFixed(3)})`);
		await page.click('.btn.sound');
		check(!(await page.$eval('.player video', (v) => v.muted)), 'the player toggle unmutes');
		await page.click('.btn.sound');
		check(await page.$eval('.player video', (v) => v.muted), 'the player toggle mutes again');
	});
}
