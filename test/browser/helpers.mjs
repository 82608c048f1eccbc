// Shared pieces of the browser suite and perf/timeline: Debian's chromium through
// playwright-core, a tiny static server for www/ (component tests), the real supervisor
// (keeppeekd --demo) with its admin password and an API token, and a page guard that
// fails a test on any console error, page error, failed request or HTTP error status.
import { chromium } from 'playwright-core';
import { spawn, execFile } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync, chmodSync, mkdirSync, existsSync, createReadStream, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, extname, dirname, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';

const here = dirname(fileURLToPath(import.meta.url));
export const SOURCE_ROOT = process.env.KP_SOURCE_ROOT || resolve(here, '..', '..');
export const BUILD_ROOT = process.env.KP_BUILD_ROOT || join(SOURCE_ROOT, 'build');
export const CHROMIUM = process.env.KP_CHROMIUM || '/usr/bin/chromium';
export const DESKTOP = { width: 1440, height: 900 };
export const MOBILE = { width: 390, height: 844 };

export function check(cond, msg) {
	if (!cond)
		throw new Error('FAIL: ' + msg);
	console.log('ok   ' + msg);
}

const cleanups = [];
export function atExit(fn) {
	cleanups.push(fn);
}
export async function runCleanups() {
	while (cleanups.length) {
		try {
			await cleanups.pop()();
		} catch (err) {
			console.error('cleanup: ' + err.message);
		}
	}
}

const openPages = [];

// After a failure: a screenshot of every page still open, and what each page says.
export async function failureShots(name) {
	for (const [i, p] of openPages.entries()) {
		if (p.isClosed())
			continue;
		try {
			const file = join(screenshotDir(), `FAILED-${name}-${i}.png`);
			await p.screenshot({ path: file });
			console.error(`     page ${i} ${p.url()}: ${file}\n     text: ${(await p.innerText('body')).replace(/\s+/g, ' ').slice(0, 400)}`);
		} catch (err) {
			console.error(`     page ${i}: no screenshot (${err.message})`);
		}
	}
}

// A fresh profile per run; returns an object with newPage(viewport).
// extra.executablePath: a wrapper that runs Debian's chromium (test_ui_live_mse runs it in
// a network namespace of its own).
export async function launch(extra = {}) {
	if (!existsSync(CHROMIUM))
		throw new Error(`${CHROMIUM} is missing: install Debian's chromium (scripts/install-deps)`);
	const dir = mkdtempSync(join(tmpdir(), 'kp-chromium-'));
	const context = await chromium.launchPersistentContext(dir, {
		executablePath: extra.executablePath || CHROMIUM,
		headless: true,
		viewport: DESKTOP,
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
			'--disable-sync', '--no-first-run', '--disable-quic', '--autoplay-policy=no-user-gesture-required'],
	});
	atExit(async () => {
		await context.close();
		rmSync(dir, { recursive: true, force: true });
	});
	return {
		context,
		async newPage(viewport = DESKTOP) {
			const page = await context.newPage();
			openPages.push(page);
			await page.setViewportSize(viewport);
			return page;
		},
	};
}

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.json': 'application/json' };

// Serves www/ at /, test/browser/ at /fixture/ and perf/timeline/ at /perf/;
// "/__blank" is an empty page with the UI's stylesheet.
export async function staticServer() {
	const roots = [['/fixture/', join(SOURCE_ROOT, 'test', 'browser')], ['/perf/', join(SOURCE_ROOT, 'perf', 'timeline')], ['/', join(SOURCE_ROOT, 'www')]];
	const server = createServer((req, res) => {
		const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
		if (path === '/__blank') {
			res.writeHead(200, { 'Content-Type': 'text/html' });
			res.end('<!doctype html><html><head><meta charset="utf-8"><link rel="stylesheet" href="/css/app.css"><link rel="icon" href="data:,"></head><body><main id="app"></main></body></html>');
			return;
		}
		for (const [prefix, root] of roots) {
			if (!path.startsWith(prefix))
				continue;
			const file = normalize(join(root, path.slice(prefix.length)));
			if (!file.startsWith(root + sep) || !existsSync(file) || !statSync(file).isFile())
				break;
			res.writeHead(200, { 'Content-Type': TYPES[extname(file)] || 'application/octet-stream', 'Cache-Control': 'no-store' });
			createReadStream(file).pipe(res);
			return;
		}
		res.writeHead(404);
		res.end();
	});
	await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
	atExit(() => new Promise((ok) => {
		server.close(ok);
		server.closeAllConnections(); // chromium's keep-alive connections
	}));
	return `http://127.0.0.1:${server.address().port}`;
}

// Collects everything that must not happen on a page. allow(re) accepts problems
// matching re until the returned function is called (a step that expects a 401).
export function guard(page, name) {
	const problems = [];
	const allowed = new Set();
	const note = (p) => {
		for (const re of allowed)
			if (re.test(p))
				return;
		problems.push(p);
	};
	page.on('console', (m) => {
		if (m.type() === 'error')
			note(`console error: ${m.text()}`);
	});
	page.on('pageerror', (e) => note(`page error: ${e.message}`));
	page.on('requestfailed', (r) => {
		const why = r.failure() ? r.failure().errorText : '';
		// Navigating away aborts what is still loading (a lazy thumbnail, a WebSocket).
		if (why !== 'net::ERR_ABORTED')
			note(`request failed: ${r.method()} ${r.url()} ${why}`);
	});
	page.on('response', (r) => {
		if (r.status() >= 400)
			note(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`);
	});
	return {
		problems,
		allow(re) {
			allowed.add(re);
			return () => allowed.delete(re);
		},
		assertClean(where) {
			check(problems.length === 0, `${name}: no console errors and no failed requests on ${where}` + (problems.length ? '\n  ' + problems.join('\n  ') : ''));
			problems.length = 0;
		},
	};
}

export function screenshotDir() {
	const d = join(BUILD_ROOT, 'test', 'browser', 'screenshots');
	mkdirSync(d, { recursive: true });
	return d;
}

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

const sleep = (ms) => new Promise((ok) => setTimeout(ok, ms));

export async function waitFor(fn, timeoutMs, what) {
	const end = Date.now() + timeoutMs;
	for (;;) {
		let v;
		try {
			v = await fn();
		} catch (err) {
			v = undefined;
			if (Date.now() > end)
				throw new Error(`${what}: ${err.message}`);
		}
		if (v)
			return v;
		if (Date.now() > end)
			throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
		await sleep(100);
	}
}

// A keeppeek-test-camera serving RTSP (H.264 main and sub) on a free loopback port.
export async function startTestCamera(dir, name) {
	const port = await freePort();
	const fx = join(BUILD_ROOT, 'test', 'fixtures');
	const proc = spawn(join(BUILD_ROOT, 'test', 'camera', 'keeppeek-test-camera'),
		['--main', join(fx, 'main.h264'), '--sub', join(fx, 'sub.h264'), '--rtsp-port', String(port), '--user', 'admin', '--password', 'cam-pass'],
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
	return { port, url: `rtsp://admin:cam-pass@127.0.0.1:${port}/main`, subUrl: `rtsp://admin:cam-pass@127.0.0.1:${port}/sub` };
}

// The real supervisor in a private directory: demo mode (two test cameras, the admin
// password it prints) or, with opts.config(dir, port) -> INI text, that configuration
// plus an admin user made with `keeppeekctl user add`. A port another process took
// between freePort and webd's bind is tried again with a new one (up to 3 times).
export async function startKeeppeek(opts = {}) {
	for (let attempt = 1; ; attempt++) {
		try {
			return await startOnce(opts);
		} catch (err) {
			if (!err.portTaken || attempt === 3)
				throw err;
		}
	}
}

async function startOnce(opts) {
	const dir = mkdtempSync(join(tmpdir(), 'kp-browser-'));
	chmodSync(dir, 0o755); // the workers run as another user (keeppeek or nobody)
	const port = await freePort();
	const bin = join(BUILD_ROOT, 'supervisor', 'keeppeekd');
	const ctlBin = join(BUILD_ROOT, 'supervisor', 'keeppeekctl');
	if (!existsSync(bin))
		throw new Error(`${bin} is missing: build first (ninja -C ${BUILD_ROOT})`);
	let args;
	let sock;
	if (opts.config) {
		const conf = join(dir, 'keeppeek.conf');
		writeFileSync(conf, await opts.config(dir, port));
		args = ['-c', conf];
		sock = join(dir, 'run', 'control.sock');
	} else {
		const data = join(dir, 'data');
		args = ['--demo', '--data-dir', data, '--listen', `127.0.0.1:${port}`];
		sock = join(data, 'run', 'control.sock');
	}
	const proc = spawn(bin, args, { cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
	let log = '';
	proc.stdout.on('data', (d) => (log += d));
	proc.stderr.on('data', (d) => (log += d));
	const exited = new Promise((ok) => proc.on('exit', ok));
	const stop = async () => { // a second call finds it stopped
		if (proc.exitCode === null) {
			process.kill(-proc.pid, 'SIGTERM');
			const t = setTimeout(() => proc.exitCode === null && process.kill(-proc.pid, 'SIGKILL'), 8000);
			await exited;
			clearTimeout(t);
		}
		rmSync(dir, { recursive: true, force: true });
	};
	atExit(stop);
	const url = `http://127.0.0.1:${port}`;
	const tail = () => log.split('\n').slice(-30).join('\n');
	const taken = `listening on 127.0.0.1:${port} failed: address already in use`;
	await waitFor(async () => {
		if (proc.exitCode !== null)
			throw new Error(`keeppeekd exited with ${proc.exitCode}`);
		if (log.includes(taken))
			return true; // answered below
		const r = await fetch(url + '/healthz', { signal: AbortSignal.timeout(2000) }); // another server may hold the port
		return r.status === 200;
	}, 30000, `keeppeekd /healthz at ${url}`).catch((err) => {
		throw new Error(err.message + '\n' + tail());
	});
	if (log.includes(taken)) {
		await stop();
		const err = new Error(`port ${port} was taken before webd bound it`);
		err.portTaken = true;
		throw err;
	}
	const kp = {
		url, dir, sock, user: 'admin', password: '', log: () => log,
		allowed: new Set(),
		// This test kills or restarts these workers on purpose; any other restart fails it.
		expectRestarts: (...names) => names.forEach((n) => kp.allowed.add(n)),
		ctl: (cmdArgs, input) => new Promise((ok, bad) => {
			const c = execFile(ctlBin, ['-s', sock, ...cmdArgs], { timeout: 30000 }, (err, out, errOut) => (err ? bad(new Error(`keeppeekctl ${cmdArgs.join(' ')}: ${errOut || err.message}`)) : ok(out)));
			c.stdin.on('error', () => {}); // keeppeekctl may exit without reading stdin
			if (input)
				c.stdin.end(input);
			else
				c.stdin.end();
		}),
	};
	started.push(kp);
	if (opts.config) {
		kp.password = 'browser-test-pass';
		await kp.ctl(['user', 'add', 'admin', '--role', 'admin'], kp.password + '\n');
	} else {
		// The demo prints the generated admin password once.
		const m = await waitFor(() => /log in as user "([^"]+)" with password (\S+)/.exec(log), 5000, 'the demo admin password in keeppeekd output')
			.catch(() => {
				throw new Error('keeppeekd --demo printed no admin password (expected: log in as user "admin" with password XXX):\n' + tail());
			});
		kp.user = m[1];
		kp.password = m[2];
	}
	return kp;
}

const started = [];

// Workers that restarted without the test asking, per keeppeekd this test started: from
// keeppeekd's own log lines ("NAME (restart N) ...", "NAME ...; restarting as asked", or
// a crash while stopping), so nothing a test did not mean goes unnoticed.
export function assertNoRestarts() {
	const re = /keeppeekd\[\d+\]: \w+: (ingestd|recorderd|webd|rtcd) (\(restart \d+\) .*|.*; restarting as asked|stopped: killed by signal (?!15 ).*)$/gm;
	for (const kp of started) {
		const bad = [...kp.log().matchAll(re)].filter((m) => !kp.allowed.has(m[1])).map((m) => `${m[1]} ${m[2]}`);
		check(bad.length === 0, `no worker restarted unless the test meant it (${bad.join('; ') || 'none did'})`);
	}
}

export async function adminToken(kp) {
	return (await kp.ctl(['token', 'create', '--name', 'browser-test', '--role', 'admin'])).trim();
}

// Cameras streaming according to the API (with a token).
export async function waitStreaming(kp, token, n = 1) {
	return waitFor(async () => {
		const r = await fetch(kp.url + '/api/v1/cameras', { headers: { Authorization: `Bearer ${token}` } });
		if (r.status !== 200)
			return false;
		const j = await r.json();
		const on = j.cameras.filter((c) => c.streams.some((s) => s.state === 'streaming'));
		return on.length >= n && j.cameras;
	}, 30000, `${n} camera(s) streaming in /api/v1/cameras`);
}

export async function login(page, kp) {
	await page.goto(kp.url + '/login.html');
	await page.fill('input[name=user]', kp.user);
	await page.fill('input[name=password]', kp.password);
	await Promise.all([page.waitForURL((u) => !u.pathname.endsWith('/login.html'), { timeout: 15000 }), page.click('button[type=submit]')]);
}

// Publishes an event (JSON form) with a JPEG made by the browser's canvas.
export async function publishEvent(kp, token, page, ev) {
	const jpeg = await page.evaluate(async (text) => {
		const c = document.createElement('canvas');
		c.width = 640;
		c.height = 360;
		const g = c.getContext('2d');
		g.fillStyle = '#2d6a4f';
		g.fillRect(0, 0, 640, 360);
		g.fillStyle = '#fff';
		g.font = '40px sans-serif';
		g.fillText(text, 40, 190);
		return c.toDataURL('image/jpeg', 0.8).split(',')[1];
	}, ev.id);
	const r = await fetch(kp.url + '/api/v1/events', {
		method: 'POST',
		headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
		body: JSON.stringify({ ...ev, jpeg_base64: jpeg }),
	});
	const body = await r.text();
	if (r.status !== 200)
		throw new Error(`POST /api/v1/events ${ev.id}: HTTP ${r.status} ${body}`);
	return JSON.parse(body);
}

// Screenshots in the light and the dark colour scheme.
export async function shoot(page, name) {
	for (const scheme of ['light', 'dark']) {
		await page.emulateMedia({ colorScheme: scheme });
		const file = join(screenshotDir(), `${name}${scheme === 'dark' ? '-dark' : ''}.png`);
		await page.screenshot({ path: file, fullPage: false });
		console.log('     screenshot ' + file);
	}
	await page.emulateMedia({ colorScheme: null });
}
