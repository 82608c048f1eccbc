"""A minimal RFC 6455 WebSocket client (Python standard library only) for integration
tests, benchmarks and examples: the opening handshake with extra headers (session cookie
or `Authorization: Bearer`), masked client frames, reassembly of fragmented messages,
automatic pong, and the closing handshake. No extensions, no TLS.

    ws = kp_ws.connect("127.0.0.1", port, "/api/v1/live", {"Authorization": "Bearer " + tok})
    kind, data = ws.recv(timeout=5)        # ("text", str) | ("binary", bytes) | ("close", (code, reason))
    ws.send_text('{"type":"hello"}')
    ws.close()
"""
import base64
import hashlib
import os
import socket
import struct
import time

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


class HandshakeError(Exception):
    """The server did not switch protocols: status is the HTTP status (0 when the
    connection closed first), headers and body what it answered instead."""

    def __init__(self, status, headers, body):
        super().__init__(f"WebSocket handshake refused: HTTP {status}: {body[:200]!r}")
        self.status, self.headers, self.body = status, headers, body


class ProtocolError(Exception):
    pass


class WebSocket:
    def __init__(self, sock, leftover=b"", max_message=64 * 1024 * 1024):
        self.sock = sock
        self.buf = bytearray(leftover)
        self.max_message = max_message
        self.closed = False
        self.bytes_received = 0

    # ---- reading ----
    def _fill(self, n, deadline):
        while len(self.buf) < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("WebSocket: no complete message before the timeout")
                self.sock.settimeout(left)
            else:
                self.sock.settimeout(None)
            try:
                chunk = self.sock.recv(max(65536, n - len(self.buf)))
            except socket.timeout:
                raise TimeoutError("WebSocket: no complete message before the timeout") from None
            if not chunk:
                raise ConnectionError("WebSocket: the server closed the TCP connection")
            self.bytes_received += len(chunk)
            self.buf += chunk

    def _take(self, n, deadline):
        self._fill(n, deadline)
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def _frame(self, deadline):
        b0, b1 = self._take(2, deadline)
        fin, opcode = bool(b0 & 0x80), b0 & 0x0F
        if b0 & 0x70:
            raise ProtocolError(f"reserved bits set (0x{b0:02x}) without a negotiated extension")
        if b1 & 0x80:
            raise ProtocolError("server frame is masked")
        n = b1 & 0x7F
        if n == 126:
            n = struct.unpack("!H", self._take(2, deadline))[0]
        elif n == 127:
            n = struct.unpack("!Q", self._take(8, deadline))[0]
        if n > self.max_message:
            raise ProtocolError(f"frame of {n} bytes is larger than {self.max_message}")
        return fin, opcode, self._take(n, deadline)

    def recv(self, timeout=None):
        """The next complete message: ("text", str), ("binary", bytes) or, when the server
        closes, ("close", (code, reason)) after answering the close. Pings are answered.
        Raises TimeoutError when nothing complete arrived within timeout seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        parts, first = [], None
        while True:
            fin, op, payload = self._frame(deadline)
            if op == OP_PING:
                self._send(OP_PONG, payload)
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                reason = payload[2:].decode("utf-8", "replace")
                if not self.closed:
                    try:
                        self._send(OP_CLOSE, payload[:2])
                    except OSError:
                        pass
                    self.closed = True
                return "close", (code, reason)
            if op == OP_CONT:
                if first is None:
                    raise ProtocolError("continuation frame without a message")
            elif op in (OP_TEXT, OP_BINARY):
                if first is not None:
                    raise ProtocolError("new message inside a fragmented one")
                first = op
            else:
                raise ProtocolError(f"unknown opcode {op}")
            parts.append(payload)
            if sum(len(p) for p in parts) > self.max_message:
                raise ProtocolError(f"message larger than {self.max_message} bytes")
            if fin:
                data = b"".join(parts)
                return ("text", data.decode("utf-8")) if first == OP_TEXT else ("binary", data)

    # ---- writing ----
    def _send(self, opcode, payload):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        whole, rest = divmod(n, 4)
        body = bytearray(payload)
        if whole:  # XOR four bytes at a time through one big integer
            words = int.from_bytes(body[:whole * 4], "big") ^ int.from_bytes(mask * whole, "big")
            body[:whole * 4] = words.to_bytes(whole * 4, "big")
        for i in range(whole * 4, n):
            body[i] ^= mask[i % 4]
        self.sock.settimeout(30)
        self.sock.sendall(head + mask + bytes(body))

    def send_text(self, text):
        self._send(OP_TEXT, text.encode("utf-8"))

    def send_binary(self, data):
        self._send(OP_BINARY, bytes(data))

    def ping(self, payload=b""):
        self._send(OP_PING, payload)

    def close(self, code=1000, reason="", timeout=2.0):
        """Closing handshake (waits up to timeout for the server's close), then the socket."""
        try:
            if not self.closed:
                self._send(OP_CLOSE, struct.pack("!H", code) + reason.encode("utf-8"))
                self.closed = True
                end = time.monotonic() + timeout
                while time.monotonic() < end:
                    kind, _ = self.recv(timeout=max(0.01, end - time.monotonic()))
                    if kind == "close":
                        break
        except (OSError, TimeoutError, ConnectionError, ProtocolError):
            pass
        finally:
            self.sock.close()


def _read_head(sock, deadline):
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("WebSocket handshake: no answer")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(buf), None
        buf += chunk
        if len(buf) > 256 * 1024:
            raise ProtocolError("WebSocket handshake: answer head larger than 256 KiB")
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    return head, rest


def connect(host, port, path, headers=None, timeout=10.0, max_message=64 * 1024 * 1024):
    """Opens a WebSocket to ws://host:port/path with extra request headers (a dict).
    Raises HandshakeError when the server answers anything but a valid 101."""
    deadline = time.monotonic() + timeout
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
                 f"Sec-WebSocket-Key: {key}", "Sec-WebSocket-Version: 13"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        head, rest = _read_head(sock, deadline)
        text = head.decode("latin-1").split("\r\n")
        status = 0
        if text and text[0].startswith("HTTP/1.1 "):
            try:
                status = int(text[0].split()[1])
            except (IndexError, ValueError):
                status = 0
        got = {}
        for line in text[1:]:
            k, _, v = line.partition(":")
            got[k.strip().lower()] = v.strip()
        if status != 101 or rest is None:
            body = rest or b""
            n = int(got.get("content-length", "0") or 0)
            if rest is not None and n > len(body):
                try:
                    sock.settimeout(max(0.01, deadline - time.monotonic()))
                    while len(body) < n:
                        chunk = sock.recv(n - len(body))
                        if not chunk:
                            break
                        body += chunk
                except OSError:
                    pass
            raise HandshakeError(status, got, body)
        want = base64.b64encode(hashlib.sha1((key + GUID).encode()).digest()).decode()
        if got.get("sec-websocket-accept") != want or got.get("upgrade", "").lower() != "websocket":
            raise ProtocolError(f"WebSocket handshake: bad accept/upgrade headers {got}")
        return WebSocket(sock, rest, max_message)
    except BaseException:
        sock.close()
        raise
