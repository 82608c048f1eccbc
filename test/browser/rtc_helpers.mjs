// Shared by rtcd's browser tests (test_rtc_*.mjs): keeppeekd with RTSP test cameras whose
// main and sub streams use the given codecs, a viewer user, and in the page a signed-in
// signaling WebSocket on /api/v1/rtc (docs/rtc-signaling.md) with helpers that open a
// peer connection and measure that its video plays.
import { spawn, execFileSync } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import { atExit, startKeeppeek, launch, waitFor, BUILD_ROOT } from './helpers.mjs';

export const VIEWER = 'rtc-viewer';
export const PASSWORD = 'rtc-viewer-pass';

function freePort() {
	return new Promise((ok, bad) => {
		const s = net.createServer();
		s.on('error', bad);
		s.listen(0, '127.0.0.1', () => {
			const p = s.address().port;
			s.close(() => ok(p));
		});
	});
}

// keeppeek-test-camera serving RTSP with main.CODEC and sub.CODEC fixtures (or a fixture
// file named in full, such as 'bframes.h264.ts'), and with audio (a fixture file name,
// such as 'audio.opus') a sound track on its main stream.
export async function startCamera(dir, name, main, sub, audio) {
	const port = await freePort();
	const fx = join(BUILD_ROOT, 'test', 'fixtures');
	const file = (kind, v) => join(fx, v.includes('.') ? v : `${kind}.${v}`);
	const proc = spawn(join(BUILD_ROOT, 'test', 'camera', 'keeppeek-test-camera'),
		['--main', file('main', main), '--sub', file('sub', sub), '--rtsp-port', String(port), '--user', 'admin', '--password', 'cam-pass',
			...(audio ? ['--audio', join(fx, audio)] : [])],
		{ cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
	let err = '';
	proc.stderr.on('data', (d) => (err += d));
	const exited = new Promise((ok) => proc.on('exit', ok));
	atExit(async () => {
		if (proc.exitCode === null) {
			proc.kill('SIGTERM');
			await exited;
		}
	});
	await new Promise((ok, bad) => {
		let out = '';
		proc.stdout.on('data', (d) => {
			out += d;
			if (out.includes('ready\n'))
				ok();
		});
		proc.on('exit', (c) => bad(new Error(`test camera ${name} exited ${c}: ${err}`)));
	});
	return `[camera "${name}"]\nurl = rtsp://admin:cam-pass@127.0.0.1:${port}/main\nsub_url = rtsp://admin:cam-pass@127.0.0.1:${port}/sub\n`;
}

// cams: [{name, main: 'h264'|'h265', sub: ..., audio: fixture (optional)}]. Returns {kp, page}
// with window.kp ready.
export async function rtcSetup(cams, extraConfig = '') {
	const kp = await startKeeppeek({
		config: async (dir, port) => {
			chmodSync(dir, 0o755); // workers drop to an unprivileged user when started as root
			let conf = `[keeppeek]\ndata_dir = ${dir}/data\nrun_dir = ${dir}/run\n[web]\nlisten = 127.0.0.1:${port}\n${extraConfig}`;
			for (const c of cams)
				conf += await startCamera(dir, c.name, c.main, c.sub, c.audio);
			return conf;
		},
	});
	await kp.ctl(['user', 'add', VIEWER, '--role', 'viewer'], PASSWORD + '\n');
	const browser = await launch();
	const page = await browser.newPage();
	page.on('console', (m) => m.type() === 'error' && console.log('     page console: ' + m.text()));
	await page.goto(kp.url + '/healthz');
	await page.evaluate(pageSetup, { user: VIEWER, password: PASSWORD });
	return { kp, page };
}

// An admin API token (keeppeekctl without standard input).
export function adminToken(kp, name) {
	return execFileSync(join(BUILD_ROOT, 'supervisor', 'keeppeekctl'), ['-s', kp.sock, 'token', 'create', '--name', name, '--role', 'admin'],
		{ stdio: ['ignore', 'pipe', 'pipe'], timeout: 30000 }).toString().trim();
}

// Prints rtcd's and webd's log lines when a test fails.
export async function withLog(fn) {
	let kp;
	try {
		await fn((k) => (kp = k));
	} catch (err) {
		if (kp)
			console.error('---- keeppeekd log (tail) ----\n' + kp.log().split('\n').filter((l) => /rtcd|webd|error|warn/i.test(l)).slice(-60).join('\n'));
		throw err;
	}
}

// Waits until rtcd answers an offer for that camera stream (its video reached rtcd).
export async function waitLive(page, camera, stream = 'main') {
	await waitFor(async () => {
		const r = await page.evaluate(([c, s]) => window.kp.offerOnly('probe-' + c + s, c, s), [camera, stream]);
		if (r.type === 'answer')
			return true;
		if (r.code !== 'not_found')
			throw new Error(`${r.code}: ${r.message}`);
		return false;
	}, 30000, `${camera} ${stream} video available to rtcd`);
	await page.evaluate(([c, s]) => window.kp.ws.send(JSON.stringify({ type: 'bye', sid: 'probe-' + c + s })), [camera, stream]);
}

// Runs in the page: logs in, opens the signaling WebSocket, defines window.kp.
async function pageSetup({ user, password }) {
	const r = await fetch('/api/v1/login', {
		method: 'POST',
		headers: { 'Content-Type': 'application/json' },
		body: JSON.stringify({ user, password }),
	});
	if (r.status !== 200)
		throw new Error(`login: HTTP ${r.status} ${await r.text()}`);
	let ws = null;
	let closeCode = null;
	const waiters = new Map();
	const inbox = [];
	const connect = async () => {
		closeCode = null;
		ws = new WebSocket(`ws://${location.host}/api/v1/rtc`);
		ws.onmessage = (e) => {
			const m = JSON.parse(e.data);
			inbox.push(m);
			const w = waiters.get(m.sid);
			if (w)
				w(m);
		};
		ws.onclose = (e) => (closeCode = e.code);
		await new Promise((ok, bad) => {
			ws.onopen = ok;
			ws.onerror = () => bad(new Error('WebSocket /api/v1/rtc failed'));
		});
	};
	await connect();
	const sessions = new Map();
	const decoded = async (pc) => {
		let n = 0;
		(await pc.getStats()).forEach((s) => {
			if (s.type === 'inbound-rtp' && s.kind === 'video')
				n = s.framesDecoded || 0;
		});
		return n;
	};
	window.kp = {
		inbox,
		get ws() {
			return ws;
		},
		connect,
		closeCode: () => closeCode,
		// Opens a peer connection (offer fields: camera, stream, mode, at_ms; with audio, an
		// audio transceiver too); resolves once the answer is applied.
		async watch(sid, fields, audio = false) {
			const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle' });
			pc.addTransceiver('video', { direction: 'recvonly' });
			if (audio)
				pc.addTransceiver('audio', { direction: 'recvonly' });
			const video = document.createElement('video');
			video.muted = true;
			video.autoplay = true;
			video.playsInline = true;
			document.body.appendChild(video);
			pc.ontrack = (e) => {
				video.srcObject = e.streams[0] || new MediaStream([e.track]);
				video.play().catch(() => {});
			};
			pc.onicecandidate = (e) => ws.send(JSON.stringify({ type: 'candidate', sid, candidate: e.candidate ? e.candidate.candidate : '', sdpMid: e.candidate ? e.candidate.sdpMid : '0' }));
			const answered = new Promise((ok, bad) => {
				waiters.set(sid, async (m) => {
					if (m.type === 'answer') {
						await pc.setRemoteDescription({ type: 'answer', sdp: m.sdp });
						ok();
					} else if (m.type === 'error') {
						bad(new Error(`${m.code}: ${m.message}`));
					}
				});
			});
			await pc.setLocalDescription(await pc.createOffer());
			const t0 = performance.now();
			ws.send(JSON.stringify({ type: 'offer', sid, sdp: pc.localDescription.sdp, stream: 'main', mode: 'live', ...fields }));
			await answered;
			sessions.set(sid, { pc, video, t0 });
			return true;
		},
		// Within ms of the offer (or of since, a performance.now() value): video time
		// advancing and framesDecoded > 0 and increasing.
		async plays(sid, ms, since) {
			const { pc, video, t0 } = sessions.get(sid);
			const start = since || t0;
			let first = null;
			while (performance.now() - start < ms) {
				const f = await decoded(pc);
				if (first === null && f > 0 && video.currentTime > 0)
					first = { f, t: video.currentTime, at: Math.round(performance.now() - start) };
				if (first && f > first.f && video.currentTime > first.t)
					return { ok: true, first, last: { f, t: video.currentTime, at: Math.round(performance.now() - start) }, w: video.videoWidth, h: video.videoHeight };
				await new Promise((ok) => setTimeout(ok, 100));
			}
			return { ok: false, first, frames: await decoded(pc), time: video.currentTime, ice: pc.iceConnectionState, conn: pc.connectionState };
		},
		// The inbound audio's getStats() counters: packetsReceived, totalSamplesReceived,
		// audioLevel (0 when there is no audio stream).
		async audioStats(sid) {
			const out = { packetsReceived: 0, totalSamplesReceived: 0, audioLevel: 0 };
			(await sessions.get(sid).pc.getStats()).forEach((s) => {
				if (s.type === 'inbound-rtp' && s.kind === 'audio')
					Object.assign(out, { packetsReceived: s.packetsReceived || 0, totalSamplesReceived: s.totalSamplesReceived || 0, audioLevel: s.audioLevel || 0 });
			});
			return out;
		},
		// The session's RTCPeerConnection (for getStats()).
		pc(sid) {
			return sessions.get(sid).pc;
		},
		// Closes the peer connection without a bye (a crashed or frozen page).
		drop(sid) {
			sessions.get(sid).pc.close();
		},
		closed(sid) {
			return inbox.find((m) => m.sid === sid && m.type === 'closed') || null;
		},
		control(sid, fields) {
			ws.send(JSON.stringify({ type: 'control', sid, ...fields }));
			return performance.now();
		},
		states(sid) {
			return inbox.filter((m) => m.sid === sid && m.type === 'state');
		},
		// Sends an offer and waits for the first answer or error for that sid.
		async offerOnly(sid, camera, stream = 'main') {
			const pc = new RTCPeerConnection();
			pc.addTransceiver('video', { direction: 'recvonly' });
			await pc.setLocalDescription(await pc.createOffer());
			const reply = new Promise((ok) => waiters.set(sid, (m) => (m.type === 'answer' || m.type === 'error') && ok(m)));
			ws.send(JSON.stringify({ type: 'offer', sid, sdp: pc.localDescription.sdp, camera, stream, mode: 'live' }));
			const m = await reply;
			pc.close();
			return { type: m.type, code: m.code, message: m.message };
		},
	};
}
