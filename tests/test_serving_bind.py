"""Issue 43.1: no address spelling serves without accounts. For each spelling, a socket is bound the way a server
binds it (an empty address: every interface); serve-check with no accounts must refuse every spelling whose bound
socket is reachable from another machine, and allow the loopback ones."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

from core.cli import main
from core.team.serving import is_loopback

ROOT = Path(__file__).resolve().parents[1]

SPELLINGS = ["", " ", "0", "0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0", "127.0.0.1", "127.1", "localhost", "::1", "[::1]",
             "::ffff:127.0.0.1", "no-such-host.invalid"]


def reachable_from_elsewhere(address: str) -> bool | None:
    """Bind as a server would (tornado/uvicorn: '' is every interface) and say whether the socket listens beyond
    loopback; None when this machine cannot bind it at all (no IPv6, an unknown name)."""
    host = address.strip().strip("[]")
    try:
        infos = socket.getaddrinfo(host or None, 0, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError:
        return None
    exposed = False
    for family, kind, proto, _, where in infos:
        with socket.socket(family, kind, proto) as s:
            try:
                s.bind(where)
            except OSError:
                return None
            ip = ipaddress.ip_address(s.getsockname()[0].split("%")[0])
            exposed |= ip.is_unspecified or not ip.is_loopback
    return exposed


@pytest.mark.parametrize("address", SPELLINGS)
def test_serve_check_refuses_every_spelling_that_binds_beyond_loopback(address, tmp_path):
    exposed = reachable_from_elsewhere(address)
    allowed = main(["--workspace", str(tmp_path / "ws"), "serve-check", address]) == 0
    if exposed is None:  # cannot be bound here: it must not be allowed either
        assert not allowed, address
    else:
        assert allowed == (not exposed), (address, exposed)
        assert is_loopback(address) == (not exposed)


def test_the_server_refuses_to_start_beyond_loopback_without_accounts(tmp_path):
    """Found in review: scripts/app.sh read the address from its flags and NERSELECT_ADDRESS only; given another way
    (STREAMLIT_SERVER_ADDRESS, a config.toml) the server listened on every interface and each page refused. server.py
    now refuses before anything listens, however the address was given."""
    import subprocess
    import sys

    code = ("from streamlit import config; config.set_option('server.address', '{}')\nimport server")
    env = {**os.environ, "NERSELECT_WORKSPACE": str(tmp_path / "ws")}
    refused = subprocess.run([sys.executable, "-c", code.format("0.0.0.0")], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0 and "refusing to listen on 0.0.0.0 with no access control" in refused.stderr
    served = subprocess.run([sys.executable, "-c", code.format("127.0.0.1")], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert served.returncode == 0, served.stderr
