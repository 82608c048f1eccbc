// A recording of the demo's Baichuan camera, whose DVI-4 ADPCM ingestd converts to Opus
// (decision 0034), played from its MP4 export by Chromium: the export (H.264 and an
// `Opus` sample entry with `dOps`) loaded as a blob into a <video>, played: Chromium
// decodes its audio (webkitAudioDecodedByteCount grows) and WebAudio on the element
// hears the fixture's tone, not silence, while the video's time advances.
import { check, launch, startKeeppeek, adminToken, waitStreaming } from './helpers.mjs';

const SILENCE = 0.01; // WebAudio peak: the tone is about 0.125 full scale

export default async function () {
	const kp = await startKeeppeek();
	const browser = await launch();
	const token = await adminToken(kp);
	await waitStreaming(kp, token, 2);
	const t0 = Date.now();
	await new Promise((ok) => setTimeout(ok, 9000));
	const url = `${kp.url}/api/v1/export?camera=demo-baichuan&stream=main&from=${t0 + 1000}&to=${t0 + 7000}`;
	const r = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
	const body = Buffer.from(await r.arrayBuffer());
	check(r.status === 200 && body.length > 10000, `the demo Baichuan camera's export (${r.status}, ${body.length} bytes)`);
	check(body.includes(Buffer.from('Opus')) && body.includes(Buffer.from('dOps')) && !body.includes(Buffer.from('mp4a')),
		'its audio track is Opus (an Opus sample entry with dOps, no mp4a)');

	const page = await browser.newPage();
	await page.goto(kp.url + '/login.html');
	const got = await page.evaluate(async (b64) => {
		const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
		const v = document.createElement('video');
		document.body.appendChild(v);
		v.src = URL.createObjectURL(new Blob([bytes], { type: 'video/mp4' }));
		const ctx = new AudioContext();
		await ctx.resume();
		const an = ctx.createAnalyser();
		an.fftSize = 2048;
		const mute = ctx.createGain();
		mute.gain.value = 0;
		ctx.createMediaElementSource(v).connect(an);
		an.connect(mute).connect(ctx.destination);
		await v.play();
		const buf = new Float32Array(an.fftSize);
		let peak = 0;
		for (let i = 0; i < 40; i++) {
			await new Promise((ok) => setTimeout(ok, 50));
			an.getFloatTimeDomainData(buf);
			for (const x of buf)
				peak = Math.max(peak, Math.abs(x));
		}
		const out = { peak, decoded: v.webkitAudioDecodedByteCount, time: v.currentTime, error: v.error && v.error.message,
			canPlay: v.canPlayType('video/mp4; codecs="avc1.640028, opus"') };
		await ctx.close();
		return out;
	}, body.toString('base64'));
	check(!got.error && got.canPlay !== '', `Chromium plays H.264 + Opus in MP4 (canPlayType "${got.canPlay}", error ${got.error})`);
	check(got.time > 1, `the export plays (at ${got.time.toFixed(2)} s)`);
	check(got.decoded > 1000, `Chromium decodes its Opus audio (${got.decoded} bytes decoded)`);
	check(got.peak > SILENCE, `WebAudio hears the camera's tone from the recording (peak ${got.peak.toFixed(3)})`);
}
