// WebRTC client for /api/v1/rtc (docs/rtc-signaling.md): one WebSocket per page carrying
// several peer connections ("sid"), live and stored playback, trickle ICE, server state
// messages, and automatic reconnect with backoff for both the socket and each session.
// A live view whose WebRTC does not connect within MSE_AFTER_MS of the answer (UDP
// blocked) falls back to fragmented MP4 over the same WebSocket played through Media
// Source Extensions (docs/decisions/0016-mse-fallback.md); the page then starts live
// views on MSE for MSE_STICKY_MS before trying WebRTC again.
import { wsUrl } from './api.js';

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const ANSWER_TIMEOUT_MS = 10000;
const MSE_AFTER_MS = 4000;
const MSE_STICKY_MS = 10 * 60 * 1000;
const MSE_QUEUE_BYTES = 64 * 1024 * 1024; // waiting for the SourceBuffer: more and the view restarts
const H265_MIME = 'video/mp4; codecs="hev1.1.6.L120.90"';
let seq = 0;
let mseUntil = 0;
let mseNoH265 = false; // an answer's H.265 MIME type was refused: ask for H.264 from then on

const mseAvailable = () => typeof MediaSource !== 'undefined';
const mseCodecs = () => (!mseNoH265 && MediaSource.isTypeSupported(H265_MIME) ? 'h264,h265' : 'h264');

class Signaling {
	constructor() {
		this.ws = null;
		this.queue = [];
		this.sessions = new Map();
		this.failures = 0;
		this.timer = 0;
	}

	connect() {
		if (this.ws || this.timer)
			return;
		const ws = new WebSocket(wsUrl('/api/v1/rtc'));
		ws.binaryType = 'arraybuffer';
		this.ws = ws;
		ws.onopen = () => {
			this.failures = 0;
			for (const m of this.queue.splice(0))
				ws.send(m);
		};
		ws.onmessage = (e) => {
			if (typeof e.data !== 'string') {
				// An MSE piece: one byte of sid length, the sid, fMP4.
				const b = new Uint8Array(e.data);
				const n = b[0];
				const s = n < b.length ? this.sessions.get(String.fromCharCode(...b.subarray(1, 1 + n))) : null;
				if (s && s.piece)
					s.piece(b.subarray(1 + n));
				return;
			}
			let m;
			try {
				m = JSON.parse(e.data);
			} catch {
				return;
			}
			const s = this.sessions.get(m.sid);
			if (s)
				s.message(m);
		};
		ws.onclose = () => {
			this.ws = null;
			this.queue.length = 0;
			const live = [...this.sessions.values()];
			this.sessions.clear();
			if (!live.length)
				return;
			const delay = BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)];
			this.timer = setTimeout(() => {
				this.timer = 0;
				for (const s of live)
					s.restart('connection to the server lost');
			}, delay);
			for (const s of live)
				s.status('reconnecting', 'Connection to the server lost; reconnecting…');
		};
	}

	send(m) {
		const text = JSON.stringify(m);
		this.connect();
		if (this.ws && this.ws.readyState === WebSocket.OPEN)
			this.ws.send(text);
		else
			this.queue.push(text);
	}

	add(s) {
		this.sessions.set(s.sid, s);
		this.connect();
	}

	remove(s) {
		this.sessions.delete(s.sid);
	}
}

const signaling = new Signaling();

// A view of one camera stream and its sound in a <video>. opts: camera, stream, mode
// ('live' or 'playback'), at (ms, playback), video, muted (default true),
// onStatus(state, text), onState(serverState), onAudio(hasAudio): whether the server
// sends sound (its answer's audio m-line is sendonly, not inactive).
export class RtcView {
	constructor(opts) {
		this.opts = { mode: 'live', ...opts };
		this.muted = this.opts.muted !== false;
		this.failures = 0;
		this.closed = false;
		this.timer = 0;
		this.start();
	}

	start() {
		if (this.opts.mode === 'live' && mseAvailable() && Date.now() < mseUntil) {
			this.startMse('WebRTC did not connect on this page lately');
			return;
		}
		this.sid = 'v' + ++seq;
		this.answered = false;
		// One transport for video and audio (rtcd bundles them on the video's).
		const pc = new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle' });
		this.pc = pc;
		pc.addTransceiver('video', { direction: 'recvonly' });
		pc.addTransceiver('audio', { direction: 'recvonly' });
		pc.ontrack = (e) => {
			const v = this.opts.video;
			const stream = e.streams[0];
			if (!stream || v.srcObject !== stream)
				v.srcObject = stream || new MediaStream([e.track]);
			v.muted = this.muted;
			v.play().catch(() => {});
		};
		pc.onicecandidate = (e) => {
			signaling.send({ type: 'candidate', sid: this.sid, candidate: e.candidate ? e.candidate.candidate : '', sdpMid: e.candidate ? e.candidate.sdpMid : '0' });
		};
		pc.onconnectionstatechange = () => {
			if (pc !== this.pc)
				return;
			if (pc.connectionState === 'connected') {
				this.failures = 0;
				clearTimeout(this.iceTimer);
				this.status('live', '');
			} else if (pc.connectionState === 'failed') {
				if (!this.fallback('ICE failed'))
					this.retry('the media connection failed');
			}
		};
		// A MediaStream "plays" before any frame arrives: Live only once connected (or on MSE).
		this.opts.video.onplaying = () => {
			if (this.mse || (this.pc && this.pc.connectionState === 'connected'))
				this.status('live', '');
		};
		signaling.add(this);
		this.status(this.failures ? 'reconnecting' : 'connecting', this.failures ? 'Reconnecting…' : 'Connecting…');
		clearTimeout(this.answerTimer);
		this.answerTimer = setTimeout(() => {
			if (!this.answered)
				this.retry('no answer from the server');
		}, ANSWER_TIMEOUT_MS);
		this.offer(pc).catch((err) => this.retry(err.message));
	}

	async offer(pc) {
		const o = await pc.createOffer();
		await pc.setLocalDescription(o);
		if (pc !== this.pc)
			return;
		const m = { type: 'offer', sid: this.sid, sdp: pc.localDescription.sdp, camera: this.opts.camera, stream: this.opts.stream, mode: this.opts.mode };
		if (this.opts.mode === 'playback')
			m.at_ms = Math.round(this.opts.at);
		signaling.send(m);
	}

	// WebRTC did not connect: a live view goes on over MSE. false when it cannot.
	fallback(reason) {
		if (this.opts.mode !== 'live' || !mseAvailable() || this.closed)
			return false;
		mseUntil = Date.now() + MSE_STICKY_MS;
		signaling.send({ type: 'bye', sid: this.sid });
		this.teardown();
		this.startMse(reason);
		return true;
	}

	startMse(reason) {
		this.sid = 'm' + ++seq;
		this.answered = false;
		this.mse = { queue: [], bytes: 0, sb: null, why: reason, trimmed: 0 };
		signaling.add(this);
		this.status(this.failures ? 'reconnecting' : 'connecting', `No WebRTC connection (${reason}); playing over the WebSocket…`);
		clearTimeout(this.answerTimer);
		this.answerTimer = setTimeout(() => {
			if (!this.answered)
				this.retry('no answer from the server');
		}, ANSWER_TIMEOUT_MS);
		signaling.send({ type: 'mse', sid: this.sid, camera: this.opts.camera, stream: this.opts.stream, codecs: mseCodecs() });
	}

	// {"type":"mse"}: the MIME type of the pieces that follow (again when the camera
	// changed codec: the view starts over). An H.265 type the browser refuses (its
	// profile or level) is asked again as H.264 (sub stream or transcoded).
	mseOpen(m) {
		const mse = this.mse;
		if (mse && this.answered) {
			this.retry(`the camera changed its codec (${m.mime})`);
			return;
		}
		if (!mse || !MediaSource.isTypeSupported(m.mime)) {
			const again = m.codec === 'h265' && !mseNoH265;
			mseNoH265 ||= m.codec === 'h265';
			this.retry(`this browser cannot play ${m.mime} through MSE`, again ? 0 : 15000);
			return;
		}
		this.answered = true;
		const v = this.opts.video;
		const ms = new MediaSource();
		v.srcObject = null;
		v.src = URL.createObjectURL(ms);
		v.muted = true;
		ms.addEventListener('sourceopen', () => {
			URL.revokeObjectURL(v.src);
			if (this.mse !== mse)
				return;
			try {
				mse.sb = ms.addSourceBuffer(m.mime);
			} catch (err) {
				this.retry('MSE refused the stream: ' + err.message, 15000);
				return;
			}
			mse.sb.mode = 'segments';
			mse.sb.addEventListener('updateend', () => this.pump(mse));
			this.pump(mse);
		}, { once: true });
		v.play().catch(() => {});
		if (this.opts.onAudio)
			this.opts.onAudio(false); // MSE carries video only
		if (this.opts.onState)
			this.opts.onState({ type: 'state', mode: 'live', transport: 'mse', codec: m.codec, stream: m.stream, fallback: m.fallback, why: mse.why });
	}

	piece(bytes) {
		const mse = this.mse;
		if (!mse)
			return;
		mse.queue.push(bytes);
		mse.bytes += bytes.length;
		if (mse.bytes > MSE_QUEUE_BYTES) {
			this.retry('the video decoder fell behind');
			return;
		}
		this.pump(mse);
	}

	// Appends what is queued (a joining view gets a whole GOP at once) in one append, keeps
	// the play position near the live edge and trims what was played every 10 s.
	pump(mse) {
		const sb = mse.sb;
		if (!sb || sb.updating || this.mse !== mse)
			return;
		const v = this.opts.video;
		const b = sb.buffered;
		if (b.length) {
			const start = b.start(b.length - 1), end = b.end(b.length - 1);
			if (v.currentTime < start || end - v.currentTime > 2)
				v.currentTime = Math.max(start, end - 0.5);
			if (v.currentTime - b.start(0) > 30 && performance.now() - mse.trimmed > 10000) {
				mse.trimmed = performance.now();
				sb.remove(b.start(0), v.currentTime - 10);
				return;
			}
		}
		if (!mse.queue.length)
			return;
		const all = new Uint8Array(mse.bytes);
		let at = 0;
		for (const p of mse.queue.splice(0)) {
			all.set(p, at);
			at += p.length;
		}
		mse.bytes = 0;
		try {
			sb.appendBuffer(all);
		} catch (err) {
			this.retry('MSE did not take the stream: ' + err.message);
			return;
		}
		if (v.paused)
			v.play().catch(() => {});
	}

	async message(m) {
		if (m.type === 'mse') {
			this.mseOpen(m);
			return;
		}
		if (m.type === 'answer') {
			this.answered = true;
			clearTimeout(this.iceTimer);
			const pc = this.pc;
			this.iceTimer = setTimeout(() => {
				if (pc === this.pc && pc.connectionState !== 'connected')
					this.fallback(`not connected within ${MSE_AFTER_MS / 1000} s`);
			}, MSE_AFTER_MS);
			try {
				await this.pc.setRemoteDescription({ type: 'answer', sdp: m.sdp });
			} catch (err) {
				this.retry('the server answer was not accepted: ' + err.message);
				return;
			}
			const audio = this.pc.getTransceivers().find((t) => t.receiver.track.kind === 'audio');
			if (this.opts.onAudio)
				this.opts.onAudio(!!audio && audio.currentDirection === 'recvonly');
		} else if (m.type === 'state') {
			if (m.mode === 'playback' && Number.isFinite(m.position_ms))
				this.opts.at = m.position_ms;
			if (this.opts.onState)
				this.opts.onState(m);
		} else if (m.type === 'error') {
			this.status('error', m.message || m.code || 'error');
			this.retry(m.message || m.code, m.code === 'not_found' || m.code === 'admission' ? 15000 : 0);
		} else if (m.type === 'closed') {
			this.retry(m.reason || 'closed by the server');
		}
	}

	status(state, text) {
		if (this.opts.onStatus)
			this.opts.onStatus(state, text);
	}

	teardown() {
		clearTimeout(this.answerTimer);
		clearTimeout(this.iceTimer);
		signaling.remove(this);
		if (this.mse) {
			this.mse = null;
			const v = this.opts.video;
			v.removeAttribute('src');
			v.load();
		}
		if (this.pc) {
			this.pc.onconnectionstatechange = null;
			this.pc.close();
		}
		this.pc = null;
	}

	retry(reason, minDelay = 0) {
		if (this.closed || this.timer)
			return;
		signaling.send({ type: 'bye', sid: this.sid });
		this.teardown();
		const delay = Math.max(minDelay, BACKOFF_MS[Math.min(this.failures++, BACKOFF_MS.length - 1)]);
		this.status('reconnecting', `Reconnecting in ${Math.round(delay / 1000) || 1} s (${reason})`);
		this.timer = setTimeout(() => {
			this.timer = 0;
			if (!this.closed)
				this.start();
		}, delay);
	}

	// The socket went away: the server forgot the session; start a new one.
	restart() {
		if (this.closed || this.timer)
			return;
		this.teardown();
		this.start();
	}

	control(op, args = {}) {
		if (op === 'seek' && args.at_ms !== undefined)
			this.opts.at = args.at_ms;
		signaling.send({ type: 'control', sid: this.sid, op, ...args });
	}

	// Sound on or off; the <video> keeps playing either way.
	setMuted(muted) {
		this.muted = muted;
		const v = this.opts.video;
		v.muted = muted;
		if (!muted)
			v.play().catch(() => {});
	}

	close() {
		this.closed = true;
		clearTimeout(this.timer);
		this.timer = 0;
		signaling.send({ type: 'bye', sid: this.sid });
		this.teardown();
		const v = this.opts.video;
		v.onplaying = null;
		v.srcObject = null;
	}
}
