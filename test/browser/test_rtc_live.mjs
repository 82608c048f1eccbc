// rtcd end to end with a real browser: keeppeekd with an H.264 test camera, a viewer user
// made with keeppeekctl, POST /api/v1/login from the page, then an RTCPeerConnection
// signaled over /api/v1/rtc (docs/rtc-signaling.md) to the camera's main stream: within
// 3 s of the offer the <video> time advances and getStats() framesDecoded is > 0 and
// increasing. Then the admission ceiling: 64 sessions for one principal are admitted,
// the 65th is refused with code "admission" and a sentence, counted in /metrics. A
// viewer that closes its peer connection without a bye is ended by rtcd.
import { check, waitFor } from './helpers.mjs';
import { adminToken, rtcSetup, waitLive, withLog } from './rtc_helpers.mjs';

export default async function () {
	await withLog(async (keep) => {
		const { kp, page } = await rtcSetup([{ name: 'rtc-cam', main: 'h264', sub: 'h264' }]);
		keep(kp);
		await waitLive(page, 'rtc-cam');

		await page.evaluate(() => window.kp.watch('live1', { camera: 'rtc-cam' }));
		const r = await page.evaluate(() => window.kp.plays('live1', 3000));
		check(r.ok, `live H.264 plays within 3 s of the offer: ${JSON.stringify(r)}`);
		const states = await page.evaluate(() => window.kp.states('live1'));
		const last = states[states.length - 1];
		check(last && last.codec === 'h264' && last.fallback === null && last.connected === true,
			`state messages say h264, no fallback, connected (${JSON.stringify(last)})`);

		// live1 is one session of this principal; 63 more are admitted, the 65th refused.
		const admitted = await page.evaluate(async () => {
			const out = [];
			for (let i = 2; i <= 64; i++)
				out.push(window.kp.offerOnly('a' + i, 'rtc-cam'));
			return (await Promise.all(out)).filter((x) => x.type === 'answer').length;
		});
		check(admitted === 63, `sessions 2..64 of one principal admitted (${admitted} of 63)`);
		const refused = await page.evaluate(() => window.kp.offerOnly('a65', 'rtc-cam'));
		check(refused.type === 'error' && refused.code === 'admission' && /64/.test(refused.message),
			`the 65th session is refused: ${JSON.stringify(refused)}`);
		const token = adminToken(kp, 'rtc-metrics');
		const metrics = await (await fetch(kp.url + '/metrics', { headers: { Authorization: `Bearer ${token}` } })).text();
		check(/keeppeek_rtc_admission_rejected_total 1\b/.test(metrics), 'rtcd counts the refusal in /metrics');
		console.log('     ' + metrics.split('\n').filter((l) => /^keeppeek_rtc_(packets|bytes|nacks|retrans|plis|keyframe|gop)/.test(l)).join('\n     '));
		// The first viewer kept playing meanwhile.
		const again = await page.evaluate(() => window.kp.plays('live1', 3000, performance.now()));
		check(again.ok, `the first viewer still plays after 64 more offers: ${JSON.stringify(again)}`);

		// A peer connection closed without a bye: rtcd ends the session by itself (DTLS
		// close_notify; a crashed page fails ICE consent freshness, RFC 7675, instead).
		await page.evaluate(() => window.kp.drop('live1'));
		const closed = await waitFor(() => page.evaluate(() => window.kp.closed('live1')), 60000, 'rtcd closing a vanished viewer');
		check(/closed the connection|ICE/.test(closed.reason), `a vanished viewer's session is closed: ${closed.reason}`);
	});
}
