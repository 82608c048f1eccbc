// H.265 cameras in a browser without H.265 (Debian's Chromium): per viewer, rtcd falls
// back visibly to the camera's H.264 sub stream when it has one ("sub-h264"), else to an
// on-demand H.265->H.264 transcode ("transcode"). Each plays within 3 s of the offer:
// video time advances and getStats() framesDecoded > 0 and increasing.
import { check } from './helpers.mjs';
import { rtcSetup, waitLive, withLog } from './rtc_helpers.mjs';

export default async function () {
	await withLog(async (keep) => {
		const { kp, page } = await rtcSetup([
			{ name: 'h265-with-h264-sub', main: 'h265', sub: 'h264' },
			{ name: 'h265-only', main: 'h265', sub: 'h265' },
		]);
		keep(kp);
		const h265 = await page.evaluate(() => RTCRtpReceiver.getCapabilities('video').codecs.some((c) => /h265|hevc/i.test(c.mimeType)));
		console.log(`     this browser ${h265 ? 'offers' : 'does not offer'} H.265 in WebRTC`);
		await waitLive(page, 'h265-with-h264-sub');
		// rtcd learns a stream's codec from its first access unit: the fallback needs the sub's.
		await waitLive(page, 'h265-with-h264-sub', 'sub');
		await waitLive(page, 'h265-only');

		await page.evaluate(() => window.kp.watch('sub', { camera: 'h265-with-h264-sub' }));
		let r = await page.evaluate(() => window.kp.plays('sub', 3000));
		check(r.ok, `H.265 camera with an H.264 sub stream plays within 3 s: ${JSON.stringify(r)}`);
		let st = (await page.evaluate(() => window.kp.states('sub'))).pop();
		check(h265 ? st.codec === 'h265' : st.codec === 'h264' && st.fallback === 'sub-h264',
			`state names the fallback (${JSON.stringify(st)})`);

		await page.evaluate(() => window.kp.watch('tc', { camera: 'h265-only' }));
		r = await page.evaluate(() => window.kp.plays('tc', 3000));
		check(r.ok, `H.265-only camera plays within 3 s: ${JSON.stringify(r)}`);
		st = (await page.evaluate(() => window.kp.states('tc'))).pop();
		check(h265 ? st.codec === 'h265' : st.codec === 'h264' && st.fallback === 'transcode',
			`state names the transcode (${JSON.stringify(st)})`);
	});
}
