"""The gateway's admin token file is written through kernel/atomic: mode 0600 from its creation,
never through a link planted at its name (which would hand the token to the link's target)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from rushhour.kernel.atomic import LinkedOutputError
from rushhour.reference_server.gateway.admin import TOKEN_ENV, resolve_admin_token


def test_a_link_planted_at_the_token_file_is_refused_and_gets_no_token(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the token was written with os.open(O_TRUNC) through the link, into the victim's file."""
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    victim = tmp_path / "readable-by-all.txt"
    victim.write_text("the user's own file\n", encoding="utf-8")
    state = tmp_path / "state"
    state.mkdir()
    (state / "admin_token").symlink_to(victim)
    with pytest.raises(LinkedOutputError, match=r'admin_token": it is a symbolic link'):
        resolve_admin_token(state)
    assert victim.read_text(encoding="utf-8") == "the user's own file\n"


def test_the_token_file_holds_the_token_readable_by_its_owner_only(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    token, path = resolve_admin_token(tmp_path / "state")
    assert path is not None and path.read_text(encoding="utf-8") == token + "\n" and len(token) >= 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
