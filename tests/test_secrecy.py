"""sagepy/secrecy.py: the one masking rule (for `sage tools list` and the server logs) and the private
`.sage/` directory (issue 18, secrets at rest)."""
from __future__ import annotations

import os
import stat

import pytest

from sagepy.store.sqlite import SqliteStore
from sagepy.secrecy import masked_command_line, open_private_log, private_directory


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(autouse=True)
def usual_umask():
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_command_lines_mask_secret_options_and_urls():
    args = ["--token", "T1", "--api-key=T2", "PASSWORD=T3", "--callback=https://me:T4@h/x?sig=T5&a=1",
            "https://h/?access_token=T6", "--verbose", "plain"]
    assert masked_command_line("srv", args) == (
        "srv --token **** --api-key=**** PASSWORD=**** '--callback=https://me:****@h/x?sig=****&a=1' "
        "'https://h/?access_token=****' --verbose plain")


def test_private_directory_makes_every_missing_level_0700_and_narrows_dot_sage(tmp_path):
    project = tmp_path / "project"
    (project / ".sage").mkdir(parents=True)
    os.chmod(project, 0o755)
    os.chmod(project / ".sage", 0o755)
    private_directory(str(project / ".sage" / "logs" / "deep"))
    for path in (".sage", ".sage/logs", ".sage/logs/deep"):
        assert mode(project / path) == 0o700, path
    assert mode(project) == 0o755  # the project itself is left alone
    (tmp_path / "plain").mkdir(mode=0o755)
    private_directory(str(tmp_path / "plain"))
    assert mode(tmp_path / "plain") == 0o755  # only what lies under .sage is narrowed


def test_private_directory_refuses_a_file_in_the_way(tmp_path):
    (tmp_path / ".sage").write_text("")
    with pytest.raises(OSError):
        private_directory(str(tmp_path / ".sage" / "logs"))


def test_logs_are_created_and_narrowed_to_0600(tmp_path):
    path = tmp_path / "x.log"
    with open_private_log(str(path)) as log:
        log.write("one\n")
    assert mode(path) == 0o600
    os.chmod(path, 0o644)
    with open_private_log(str(path)) as log:
        log.write("two\n")
    assert mode(path) == 0o600 and path.read_text() == "one\ntwo\n"


def test_the_state_store_directory_is_private(tmp_path):
    store = SqliteStore(str(tmp_path / ".sage" / "state.db"))
    store.close()
    assert mode(tmp_path / ".sage") == 0o700
