// WebRTC client for /api/v1/rtc (docs/rtc-signaling.md): one WebSocket per page carrying
// several peer connections ("sid"), live and stored playback, trickle ICE, server state
// messages, and automatic reconnect with backoff for both the socket and each session.
import { wsUrl } from './api.js';

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];
const ANSWER_TIMEOUT_MS = 10000;
let seq = 0;

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
		this.ws = ws;
		ws.onopen = () => {
			this.failures = 0;
			for (const m of this.queue.splice(0))
				ws.send(m);
		};
		ws.onmessage = (e) => {
			if (typeof e.data !== 'string')
				return;
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
				this.status('live', '');
			} else if (pc.connectionState === 'failed') {
				this.retry('the media connection failed');
			}
		};
		this.opts.video.onplaying = () => this.status('live', '');
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

	async message(m) {
		if (m.type === 'answer') {
			this.answered = true;
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
		signaling.remove(this);
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
