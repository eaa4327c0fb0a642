"""OpenID Connect providers on loopback for the sign-in tests.

`MockIdP`: the PyPI package oidc-provider-mock (a real OIDC provider: authlib's authorization code grant, RS256 ID
tokens, discovery, JWKS, userinfo, a sign-in form where one types the subject) run as a process of its own on a free
port, with nonces required and PKCE enforced in front of it (the package ignores `code_challenge`: a code redeemed
without the verifier of its S256 challenge is refused with invalid_grant, as RFC 7636 says). It exits when the test
process closes its stdin, so it never outlives the tests.

`CraftedIdP`: a small provider in a thread that answers the authorization request at once (no form) and hands out
the ID token a test asks for: signed with another key, for another audience or issuer, expired, without `sub`, with
another nonce. What the portal must refuse comes from a real HTTP server, not a patched function.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

import requests

# --- oidc-provider-mock in a process of its own -------------------------------------------------------------------


def _s256(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


class PkceEnforcer:
    """WSGI middleware: authorization requests need an S256 challenge; the code's redemption needs its verifier."""

    def __init__(self, app):
        self.app = app
        self.challenges: dict[str, str] = {}
        self.lock = threading.Lock()

    @staticmethod
    def _refuse(start_response, status: str, body: dict):
        start_response(status, [("Content-Type", "application/json")])
        return [json.dumps(body).encode()]

    def __call__(self, environ, start_response):
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "GET")
        if path == "/oauth2/authorize":
            query = parse_qs(environ.get("QUERY_STRING", ""))
            challenge = (query.get("code_challenge") or [""])[0]
            if not challenge or (query.get("code_challenge_method") or ["plain"])[0] != "S256":
                return self._refuse(
                    start_response,
                    "400 Bad Request",
                    {"error": "invalid_request", "error_description": "PKCE S256 required"},
                )

            def remember(status, headers, exc_info=None):
                for name, value in headers:
                    if name.lower() == "location":
                        code = (parse_qs(urlsplit(value).query).get("code") or [""])[0]
                        if code:
                            with self.lock:
                                self.challenges[code] = challenge
                return start_response(status, headers, exc_info)

            return self.app(environ, remember)
        if path == "/oauth2/token" and method == "POST":
            body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            form = parse_qs(body.decode())
            if (form.get("grant_type") or [""])[0] == "authorization_code":
                with self.lock:
                    challenge = self.challenges.pop((form.get("code") or [""])[0], None)
                verifier = (form.get("code_verifier") or [""])[0]
                if challenge is None or not verifier or _s256(verifier) != challenge:
                    return self._refuse(
                        start_response,
                        "400 Bad Request",
                        {"error": "invalid_grant", "error_description": "PKCE failed"},
                    )
            environ["wsgi.input"] = io.BytesIO(body)
        return self.app(environ, start_response)


def _serve() -> None:
    """python -m tests.fakes.oidc_idp: serve oidc-provider-mock on a free loopback port, print it, exit on EOF."""
    import os

    import oidc_provider_mock
    import werkzeug.serving

    app = oidc_provider_mock.app(require_nonce=True)
    server = werkzeug.serving.make_server("127.0.0.1", 0, PkceEnforcer(app), threaded=True)
    print(server.server_port, flush=True)

    def watch_parent():
        sys.stdin.read()  # EOF: the test process closed the pipe or died
        os._exit(0)

    threading.Thread(target=watch_parent, daemon=True).start()
    server.serve_forever(poll_interval=0.1)


class MockIdP:
    def __init__(self):
        self.process = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "tests.fakes.oidc_idp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.port = int(self.process.stdout.readline())
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                if requests.get(self.url + "/.well-known/openid-configuration", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, "oidc-provider-mock did not start"
            time.sleep(0.1)

    def set_user(self, sub: str, claims: dict) -> None:
        requests.put(f"{self.url}/users/{sub}", json=claims, timeout=5).raise_for_status()

    def sign_in(self, authorize_url: str, sub: str) -> str:
        """What a person does at the IdP's form, over HTTP: returns where the IdP sends the browser back."""
        response = requests.post(authorize_url, data={"sub": sub}, allow_redirects=False, timeout=10)
        assert response.status_code == 302, response.text[:500]
        return response.headers["Location"]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


# --- a provider that hands out the tokens a test asks for ----------------------------------------------------------


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (the portal's time-out) is what the slow-IdP test wants


class CraftedIdP:
    """Discovery, JWKS, an authorization endpoint that redirects back at once, and a token endpoint whose ID token
    is built from `claims` (defaults: valid) and signed with `signing_key` (default: the published key)."""

    def __init__(self, client_id: str):
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.client_id = client_id
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "crafted-1"
        self.codes: dict[str, dict] = {}  # code -> the authorization request's parameters
        self.overrides: dict = {}  # claims to set (None removes one)
        self.sign_with_other_key = False
        self.nonce_override: str | None = None
        self.groups: list[str] = []
        self.token_gate: threading.Event | None = None  # set: the token endpoint waits for it (a slow IdP)
        self.server = _QuietServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self.thread.start()

    def id_token(self, request: dict) -> str:
        import jwt

        now = int(time.time())
        claims = {
            "iss": self.url,
            "aud": self.client_id,
            "sub": "crafted-subject",
            "iat": now,
            "exp": now + 300,
            "nonce": request.get("nonce"),
            "preferred_username": "crafted",
            "groups": self.groups,
        }
        if self.nonce_override is not None:
            claims["nonce"] = self.nonce_override
        for name, value in self.overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        key = self.other_key if self.sign_with_other_key else self.key
        return jwt.encode(claims, key, algorithm="RS256", headers={"kid": self.kid})

    def _handler(self):
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _json(self, body, status=200):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                parts = urlsplit(self.path)
                if parts.path == "/.well-known/openid-configuration":
                    return self._json(
                        {
                            "issuer": idp.url,
                            "authorization_endpoint": idp.url + "/authorize",
                            "token_endpoint": idp.url + "/token",
                            "userinfo_endpoint": idp.url + "/userinfo",
                            "jwks_uri": idp.url + "/jwks",
                        }
                    )
                if parts.path == "/jwks":
                    from jwt.algorithms import RSAAlgorithm

                    jwk = json.loads(RSAAlgorithm.to_jwk(idp.key.public_key()))
                    return self._json({"keys": [{**jwk, "kid": idp.kid, "alg": "RS256", "use": "sig"}]})
                if parts.path == "/authorize":
                    query = {key: values[0] for key, values in parse_qs(parts.query).items()}
                    code = uuid.uuid4().hex
                    idp.codes[code] = query
                    self.send_response(302)
                    location = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query["state"]})
                    self.send_header("Location", location)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if parts.path == "/userinfo":
                    return self._json({"sub": idp.overrides.get("sub", "crafted-subject") or "crafted-subject"})
                return self._json({"error": "not_found"}, 404)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if idp.token_gate is not None:
                    idp.token_gate.wait(30)
                form = {key: values[0] for key, values in parse_qs(body).items()}
                request = idp.codes.pop(form.get("code", ""), None)
                if urlsplit(self.path).path != "/token" or request is None:
                    return self._json({"error": "invalid_grant"}, 400)
                if _s256(form.get("code_verifier", "")) != request.get("code_challenge"):
                    return self._json({"error": "invalid_grant", "error_description": "PKCE failed"}, 400)
                return self._json(
                    {"access_token": uuid.uuid4().hex, "token_type": "Bearer", "id_token": idp.id_token(request)}
                )

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


if __name__ == "__main__":
    _serve()
