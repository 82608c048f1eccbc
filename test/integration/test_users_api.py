"""Users and API tokens through the HTTP API, as an admin in the browser manages them
(/api/v1/users, /api/v1/tokens): a user added with a role logs in, a new password ends
its sessions and the old one stops working, a deleted user cannot log in; a token is
shown once at creation, works, is listed without its secret and stops working when
revoked; a viewer gets 403 on every one of these routes; a password appears in no answer
and no log line; no worker restarts."""
import json

from kp import check, run, wait_for

LOGIN = "/api/v1/login"


def login(kp, user, password):
    st, hdr, body = kp.http("POST", LOGIN, json.dumps({"user": user, "password": password}),
                            {"Content-Type": "application/json"})
    return st


def test(make):
    kp = make()
    kp.wait_running()
    admin = {"Authorization": "Bearer " + kp.token("admin"), "Content-Type": "application/json"}
    viewer = {"Authorization": "Bearer " + kp.token("viewer"), "Content-Type": "application/json"}

    for method, path, body in [("GET", "/api/v1/users", None), ("POST", "/api/v1/users", "{}"),
                               ("POST", "/api/v1/users/admin/role", '{"role":"viewer"}'),
                               ("POST", "/api/v1/users/admin/password", "{}"), ("DELETE", "/api/v1/users/admin", None),
                               ("GET", "/api/v1/tokens", None), ("POST", "/api/v1/tokens", "{}"),
                               ("DELETE", "/api/v1/tokens/x", None)]:
        st, _, _ = kp.http(method, path, body, viewer)
        check(st == 403, f"a viewer: {method} {path} is 403 ({st})")

    pw = "Secret-pass-123"
    st, _, body = kp.http("POST", "/api/v1/users", json.dumps({"name": "alice", "role": "viewer", "password": pw}), admin)
    check(st == 200 and b"user alice added" in body and pw.encode() not in body, f"add a user ({st} {body!r})")
    st, _, body = kp.http("POST", "/api/v1/users", json.dumps({"name": "alice", "role": "viewer", "password": pw}), admin)
    check(st == 409 and b"already exists" in body, f"adding her again: 409 ({st})")
    st, _, body = kp.http("POST", "/api/v1/users", json.dumps({"name": "bob", "role": "admin", "password": "short"}), admin)
    check(st == 400, f"a too-short password: 400 ({st} {body!r})")
    st, _, body = kp.http("GET", "/api/v1/users", None, admin)
    users = {u["name"]: u["role"] for u in json.loads(body)["users"]} if st == 200 else {}
    check(users.get("alice") == "viewer", f"the list has her with her role ({users})")
    check(login(kp, "alice", pw) == 200, "she logs in")

    st, _, body = kp.http("POST", "/api/v1/users/alice/role", json.dumps({"role": "admin"}), admin)
    check(st == 200 and b"alice is now admin" in body, f"a new role ({st} {body!r})")
    st, _, body = kp.http("GET", "/api/v1/users", None, admin)
    check(st == 200 and {u["name"]: u["role"] for u in json.loads(body)["users"]}.get("alice") == "admin",
          "the list shows the new role")
    st, _, body = kp.http("POST", "/api/v1/users/alice/role", json.dumps({"role": "publisher"}), admin)
    check(st == 400, f"publisher is a token's role, not a user's: 400 ({st})")
    kp.http("POST", "/api/v1/users/alice/role", json.dumps({"role": "viewer"}), admin)
    pw2 = "Another-pass-456"
    st, _, body = kp.http("POST", "/api/v1/users/alice/password", json.dumps({"password": pw2}), admin)
    check(st == 200 and b"password of alice changed" in body, f"a new password ({st} {body!r})")
    check(login(kp, "alice", pw) == 401 and login(kp, "alice", pw2) == 200, "the old password stops working, the new one works")
    st, _, body = kp.http("DELETE", "/api/v1/users/alice", None, admin)
    check(st == 200 and b"deleted" in body, f"delete the user ({st})")
    check(login(kp, "alice", pw2) == 401, "a deleted user cannot log in")
    st, _, _ = kp.http("DELETE", "/api/v1/users/alice", None, admin)
    check(st == 409, f"deleting her again: 409 ({st})")

    st, _, body = kp.http("POST", "/api/v1/tokens", json.dumps({"name": "detector", "role": "publisher"}), admin)
    tok = json.loads(body) if st == 200 else {}
    check(st == 200 and tok.get("token", "").startswith("kp_") and tok.get("role") == "publisher",
          f"create a token: answered once ({st} {tok.get('name')})")
    st, _, body = kp.http("GET", "/api/v1/tokens", None, admin)
    check(st == 200 and b"detector" in body and tok.get("token", "x").encode() not in body,
          "the list names it, without its secret")
    pub = {"Authorization": "Bearer " + tok.get("token", "")}
    st, _, _ = kp.http("GET", "/api/v1/cameras", None, pub)
    check(st == 403, f"a publisher token works and has its role ({st} on a viewer route)")
    st, _, _ = kp.http("DELETE", "/api/v1/tokens/detector", None, admin)
    check(st == 200, f"revoke it ({st})")
    check(wait_for(lambda: kp.http("POST", "/api/v1/events", "{}", pub)[0] == 401, 12), "a revoked token stops working")
    log = kp.log_text()
    check(pw not in log and pw2 not in log and tok.get("token", "x") not in log, "no password or token in the log")
    check(not kp.unexpected_restarts(), f"no worker restarted ({kp.unexpected_restarts()})")


if __name__ == "__main__":
    run(test)
