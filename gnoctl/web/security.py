"""Who may use the page: this user's browser, on the address `gnoctl web` printed.

The printed address carries the secret (`?key=`); the first visit trades it for an
HttpOnly SameSite=Lax cookie and redirects to the clean address, so the secret does
not stay in the history or reach a Referer. Lax, not Strict: a link to the page from
elsewhere (a wiki, a mail, a note) is a visit of this browser too (Strict sent no cookie
with it: "open the printed address", in a browser that had); nothing another site's
request could start changes anything without the CSRF token below. The cookie is a session id signed with the
secret (it outlives a restart of `gnoctl web`, not a new secret), and each session has
its CSRF token derived the same way: the pages carry it, and every request that changes
something (anything but GET and HEAD) must send it back in `X-CSRF-Token` from an
allowed Origin. Host and Origin are checked on every request against DNS rebinding.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlencode

from starlette.datastructures import Headers, QueryParams
from starlette.requests import cookie_parser
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_HEADER = "x-csrf-token"
COOKIE_DAYS = 30
SAFE_METHODS = frozenset({"GET", "HEAD"})
# Shown without a session: the 401 page's own look.
PUBLIC_PREFIXES = ("/static/",)
# The page runs only its own files; nothing it shows may frame it, run script or post elsewhere.
HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
}


def _sign(secret: str, purpose: str, value: str) -> str:
    return hmac.new(secret.encode(), f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()[:43]


class Sessions:
    """Session cookies and their CSRF tokens, derived from the secret (nothing stored)."""

    def __init__(self, secret: str, port: int) -> None:
        self.secret = secret
        # Browsers share cookies across ports: one name per port keeps two servers apart.
        self.cookie = f"gno_web_{port}"

    def key_matches(self, key: str) -> bool:
        return hmac.compare_digest(key.encode(), self.secret.encode())

    def new_cookie(self) -> str:
        sid = secrets.token_urlsafe(16)
        return f"{sid}.{_sign(self.secret, 'session', sid)}"

    def session(self, cookie: str | None) -> str | None:
        """The session id a cookie proves, or None."""
        sid, _, mac = (cookie or "").partition(".")
        if sid and hmac.compare_digest(mac.encode(), _sign(self.secret, "session", sid).encode()):
            return sid
        return None

    def csrf(self, sid: str) -> str:
        return _sign(self.secret, "csrf", sid)


DENIED = """<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport"
content="width=device-width, initial-scale=1"><title>gno: open the printed address</title>
<link rel="stylesheet" href="/static/gno.css"><main class="narrow"><h1>Open the address <code>gnoctl web</code>
printed</h1><p>This page serves your documents, so it answers only a browser that came through the address
with the key, which <code>gnoctl web</code> printed when it started (<code>http://…/?key=…</code>). Open that
address once; this browser is then remembered.</p></main></html>"""


class Guard:
    """ASGI middleware in front of every route (see the module's docstring)."""

    def __init__(self, app: ASGIApp, sessions: Sessions, hosts: list[str], origins: list[str]) -> None:
        self.app = app
        self.sessions = sessions
        self.hosts = frozenset(h.lower() for h in hosts)
        self.origins = frozenset(o.lower() for o in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.setdefault("headers", [])
                present = {k.lower() for k, _ in headers}
                headers.extend((k.encode(), v.encode()) for k, v in HEADERS.items() if k.encode() not in present)
            await send(message)

        response = self._check(scope)
        if response is not None:
            await response(scope, receive, send_secured)
        else:
            await self.app(scope, receive, send_secured)

    def _check(self, scope: Scope) -> Response | None:
        """The response that refuses the request, or None (then `scope['state']` has the CSRF token)."""
        headers = Headers(scope=scope)
        if headers.get("host", "").lower() not in self.hosts:
            return PlainTextResponse(
                f"this server answers only as {min(self.hosts)} (a wrong Host: DNS rebinding?)", status_code=421
            )
        origin = headers.get("origin")
        if origin is not None and origin.lower() not in self.origins:
            return PlainTextResponse("requests from other sites are refused", status_code=403)
        path: str = scope["path"]
        if path.startswith(PUBLIC_PREFIXES):
            return None
        query = QueryParams(scope.get("query_string", b"").decode("latin-1"))
        if "key" in query:
            if not self.sessions.key_matches(query["key"]):
                return HTMLResponse(DENIED, status_code=401)
            rest = urlencode([(k, v) for k, v in query.multi_items() if k != "key"])
            redirect = RedirectResponse(path + (f"?{rest}" if rest else ""), status_code=303)
            redirect.set_cookie(
                self.sessions.cookie,
                self.sessions.new_cookie(),
                max_age=COOKIE_DAYS * 86400,
                httponly=True,
                samesite="lax",
                path="/",
            )
            return redirect
        sid = self.sessions.session(cookie_parser(headers.get("cookie", "")).get(self.sessions.cookie))
        if sid is None:
            return HTMLResponse(DENIED, status_code=401)
        csrf = self.sessions.csrf(sid)
        if scope["method"] not in SAFE_METHODS:
            if origin is None:
                return PlainTextResponse("a change needs the Origin header of this page", status_code=403)
            if not hmac.compare_digest(headers.get(CSRF_HEADER, "").encode(), csrf.encode()):
                return PlainTextResponse("missing or wrong CSRF token: reload the page", status_code=403)
        scope.setdefault("state", {})["csrf"] = csrf
        return None
