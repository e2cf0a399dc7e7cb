"""Running the UI: bind (loopback unless told otherwise), print the URL, serve with uvicorn until SIGINT/SIGTERM."""

from __future__ import annotations

import ipaddress
import secrets
import signal
import socket
import sys
import threading
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    import uvicorn


class ServeError(Exception):
    """The server cannot start (a busy port, a bad host): one line for the user."""


@dataclass(frozen=True)
class ServeOptions:
    sessions_dir: Path
    billing_files: list[Path]
    host: str = "127.0.0.1"
    port: int = 8777
    token: str | None = None
    open_browser: bool = False
    jaeger_url: str | None = None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return host == ""


def page_url(host: str, port: int, token: str | None) -> str:
    """The URL to open; the token percent-encoded whole (a ``+``, ``&``, ``#`` or ``;`` in it is the token's own)."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={quote(token, safe='')}" if token else "")


def _bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ServeError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def ui_server(config) -> "uvicorn.Server":
    """A uvicorn server that ends the app's live streams (``app.state.stopping``) as its shutdown starts: they
    would never end by themselves, so it waited out its graceful timeout and cancelled them with a traceback."""
    import uvicorn

    class UiServer(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            stopping = getattr(getattr(config.app, "state", None), "stopping", None)
            if stopping is not None:
                stopping.set()
            await super().shutdown(sockets=sockets)

    return UiServer(config)


def serve(options: ServeOptions) -> None:
    """Serve until SIGINT/SIGTERM. A non-loopback host without a token gets a generated one (said on stderr)."""
    import uvicorn

    from otel_agents.ui.app import create_app

    token = options.token
    if token is None and not is_loopback(options.host):
        token = secrets.token_urlsafe(24)
    sock = _bind(options.host, options.port)
    host, port = sock.getsockname()[:2]
    url = page_url(host, port, token)
    # A wildcard bind is reached by names no one can list: there the token (required) guards it, not the Host.
    hosts = None if _wildcard(options.host) else [options.host, host]
    app = create_app(options.sessions_dir, options.billing_files, token=token, jaeger_url=options.jaeger_url,
                     hosts=hosts)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False,
                            timeout_graceful_shutdown=2)
    server = ui_server(config)

    def stop(*_: object) -> None:
        server.should_exit = True

    # Ours from before the URL is printed (a signal right after it must not kill the process). uvicorn
    # puts its own in place while serving, and afterwards raises what it caught again: here, harmlessly.
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    print(url, flush=True)
    if token is not None and options.token is None:
        print(f"ui: {options.host} is not loopback, so every request needs a token; generated {token}: open {url}",
              file=sys.stderr, flush=True)
    if options.open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    server.run(sockets=[sock])
