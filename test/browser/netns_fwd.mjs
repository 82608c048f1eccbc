// For test_ui_live_mse: a Chromium that reaches keeppeek's web port over TCP and nothing
// else. Chromium runs in a network namespace of its own (unshare -n: only its own
// loopback), where `node netns_fwd.mjs inner PORT SOCK` listens on 127.0.0.1:PORT and
// carries each connection over the Unix socket SOCK (Unix sockets cross network
// namespaces) to outer(), which connects it to the real 127.0.0.1:PORT. rtcd's ICE
// candidates (127.0.0.1, UDP) then lead to the namespace's empty loopback: ICE fails.
import net from 'node:net';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

function pipe(a, b) {
	a.pipe(b);
	b.pipe(a);
	a.on('error', () => b.destroy());
	b.on('error', () => a.destroy());
	a.on('close', () => b.destroy());
	b.on('close', () => a.destroy());
}

// The host side: SOCK -> 127.0.0.1:port. Resolves with the server (close it at the end).
export function outer(sock, port) {
	return new Promise((ok, bad) => {
		const s = net.createServer((c) => pipe(c, net.connect(port, '127.0.0.1')));
		s.on('error', bad);
		s.listen(sock, () => ok(s));
	});
}

// An executable that starts chromium in its own network namespace with the inner forwarder.
export function wrapper(dir, chromium, port, sock) {
	const path = join(dir, 'chromium-netns');
	const me = fileURLToPath(import.meta.url);
	writeFileSync(path, `#!/bin/sh\nexec unshare -n sh -c 'ip link set lo up || exit 1; ${process.execPath} ${me} inner ${port} ${sock} & exec ${chromium} "$@"' sh "$@"\n`);
	chmodSync(path, 0o755);
	return path;
}

if (process.argv[2] === 'inner') {
	const [port, sock] = [Number(process.argv[3]), process.argv[4]];
	net.createServer((c) => pipe(c, net.connect(sock))).listen(port, '127.0.0.1');
	const parent = process.ppid;
	setInterval(() => process.ppid !== parent && process.exit(0), 1000); // chromium ended
}
