// B-frames over WebRTC (issue 13 item 3; what the browser makes of them is issue 15's):
// an RTSP test camera serving the H.264 high-profile fixture with 2 B-frames; rtcd sends
// access units in decode order with RTP timestamps from their PTS (RFC 6184 5.1), live
// and from the recording. Debian's Chromium 156 does not render such a stream
// smoothly: it receives the frames but decodes little more than the keyframes (live,
// 21 of 224 frames in 5 s, 11 of them keyframes) and asks for keyframes, so playback
// (which then skips to the next keyframe) sends few frames. What it decodes is printed;
// the test asserts that both sessions connect, frames arrive and keyframes are decoded,
// and run.mjs that no worker restarted.
import { check } from './helpers.mjs';
import { rtcSetup, waitLive, withLog } from './rtc_helpers.mjs';

export default async function () {
	await withLog(async (keep) => {
		const { kp, page } = await rtcSetup([{ name: 'bf-cam', main: 'bframes.h264.ts', sub: 'h264' }]);
		keep(kp);
		await waitLive(page, 'bf-cam');
		const recStart = Date.now();
		const stats = (sid) => page.evaluate(async (s) => {
			const pc = window.kp.pc(s);
			const out = {};
			(await pc.getStats()).forEach((r) => {
				if (r.type === 'inbound-rtp' && r.kind === 'video')
					Object.assign(out, { framesReceived: r.framesReceived, framesDecoded: r.framesDecoded, framesDropped: r.framesDropped, packetsReceived: r.packetsReceived, keyFramesDecoded: r.keyFramesDecoded, conn: pc.connectionState });
			});
			return out;
		}, sid);

		await page.evaluate(() => window.kp.watch('live', { camera: 'bf-cam' }));
		const live = await page.evaluate(() => window.kp.plays('live', 5000));
		await page.waitForTimeout(4000);
		const ls = await stats('live');
		console.log(`     live: plays ${live.ok} ${JSON.stringify(live)}; stats ${JSON.stringify(ls)}`);
		check(ls.conn === 'connected' && ls.framesReceived > 100 && ls.keyFramesDecoded >= 2, `live: connected, frames arrive, keyframes decoded (${JSON.stringify(ls)})`);

		await page.waitForTimeout(Math.max(0, recStart + 12000 - Date.now()));
		await page.evaluate((t) => window.kp.watch('pb', { camera: 'bf-cam', mode: 'playback', at_ms: t }), recStart + 3000);
		const pb = await page.evaluate(() => window.kp.plays('pb', 5000));
		await page.waitForTimeout(4000);
		const ps = await stats('pb');
		console.log(`     playback: plays ${pb.ok} ${JSON.stringify(pb)}; stats ${JSON.stringify(ps)}`);
		check(ps.conn === 'connected' && ps.framesReceived >= 10 && ps.keyFramesDecoded >= 2, `playback: connected, frames arrive, keyframes decoded (${JSON.stringify(ps)})`);
	});
}
