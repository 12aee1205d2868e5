"""Bad input gives a coded diagnostic or a catchable Sage error, never `internal error` (issue 18, item 3):
source and config files that are not UTF-8, a NUL byte where a process is started, a grove.toml nested too
deeply, a lone surrogate printed, running out of memory."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

HELLO = """\
agent Main {
  on start {
    print("hi");
  }
}
run Main;
"""


def sage(*args: str, cwd: Path, limit_memory: bool = False) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))

    def one_gigabyte_of_address_space() -> None:
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=120, preexec_fn=one_gigabyte_of_address_space if limit_memory else None)


def out(r: subprocess.CompletedProcess) -> tuple[str, str]:
    return r.stdout.decode("utf-8"), r.stderr.decode("utf-8")


@pytest.mark.parametrize("command", ["run", "check"])
def test_source_not_utf8_is_e001_at_the_first_bad_byte(tmp_path: Path, command: str) -> None:
    (tmp_path / "main.sg").write_bytes(b'agent Main {\n  on start {\n    print("h\xffi\xfe");\n  }\n}\nrun Main;\n')
    r = sage(command, "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert r.returncode == 1
    assert "internal error" not in stderr
    assert "error[E001]: invalid UTF-8: byte 0xff (source files must be UTF-8)\n --> main.sg:3:13\n" in stderr


def test_module_not_utf8_is_e001_in_that_file(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text("mod util;\n" + HELLO, encoding="utf-8")
    (tmp_path / "util.sg").write_bytes(b"\xc3\n")
    stdout, stderr = out(sage("check", "main.sg", cwd=tmp_path))
    assert "error[E001]: invalid UTF-8: byte 0xc3" in stderr
    assert "--> util.sg:1:1" in stderr


def test_dotenv_not_utf8_is_e090_without_quoting_the_line(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(HELLO, encoding="utf-8")
    (tmp_path / ".env").write_bytes(b"A=1\nSECRET=sk-\xff-hidden\n")
    r = sage("run", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert r.returncode == 1 and stdout == ""
    assert stderr.startswith("error[E090]: invalid .env: invalid UTF-8: byte 0xff (at line 2, column 11)\n")
    assert "hidden" not in stderr and "internal error" not in stderr


@pytest.mark.parametrize("line", [b"A=x\x00y\n", b"=value\n"])
def test_dotenv_line_the_environment_cannot_hold_is_e090(tmp_path: Path, line: bytes) -> None:
    (tmp_path / "main.sg").write_text(HELLO, encoding="utf-8")
    (tmp_path / ".env").write_bytes(b"# comment\n" + line)
    r = sage("run", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert r.returncode == 1
    assert stderr.startswith("error[E090]: invalid .env: a variable needs a name, and no NUL byte "
                             "(at line 2, column 1)\n")


def test_grove_nested_too_deeply_is_e090(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(HELLO, encoding="utf-8")
    (tmp_path / "grove.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    r = sage("run", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert r.returncode == 1
    assert stderr.startswith("error[E090]: invalid grove.toml: arrays or inline tables nested too deeply\n")


def test_grove_not_utf8_is_e090_at_the_byte(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(HELLO, encoding="utf-8")
    (tmp_path / "grove.toml").write_bytes(b'[project]\nname = "\xfe"\n')
    stdout, stderr = out(sage("check", "main.sg", cwd=tmp_path))
    assert "error[E090]: invalid grove.toml: invalid UTF-8: byte 0xfe\n --> grove.toml:2:9\n" in stderr


def test_nul_byte_in_a_tools_table_is_e090(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(HELLO, encoding="utf-8")
    (tmp_path / "grove.toml").write_text(textwrap.dedent("""\
        [tools.A]
        command = "ec\\u0000ho"
        [tools.B]
        command = "echo"
        args = ["x", "y\\u0000"]
        [tools.C]
        command = "echo"
        env = { TOKEN = "t\\u0000" }
        """), encoding="utf-8")
    r = sage("check", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert r.returncode == 1 and "internal error" not in stderr
    for table, key, line in (("A", "command", 2), ("B", "args", 5), ("C", "env.TOKEN", 8)):
        assert (f"error[E090]: grove.toml: [tools.{table}] {key} contains a NUL byte, which cannot be passed to "
                f"a process\n --> grove.toml:{line}:1\n") in stderr


def test_nul_byte_in_mcp_connect_is_a_catchable_config_error(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(textwrap.dedent("""\
        agent Main {
          on start {
            for config in ["\\{\\"command\\": \\"ec\\\\u0000ho\\"}",
                           "\\{\\"command\\": \\"echo\\", \\"args\\": [\\"a\\\\u0000\\"]}",
                           "\\{\\"command\\": \\"echo\\", \\"cwd\\": \\"/\\\\u0000\\"}",
                           "\\{\\"command\\": \\"echo\\", \\"env\\": \\{\\"A\\\\u0000\\": \\"a\\"}}"] {
              let h = mcp_connect(config) catch(e) { print("caught: {e}"); "" };
            }
          }
        }
        run Main;
        """), encoding="utf-8")
    r = sage("run", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert (stderr, r.returncode) == ("", 0)
    assert stdout.splitlines() == [
        f"caught: invalid MCP config: [mcp_connect] {key} contains a NUL byte, which cannot be "
        "passed to a process" for key in ("command", "args", "cwd", "env")]


def test_lone_surrogate_prints_as_a_replacement_character(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(textwrap.dedent("""\
        agent Main {
          on start {
            let s = json_decode::<String>("\\"a\\\\ud800b\\\\udfffc\\"") catch(e) { "not decoded" };
            print("before");
            print(s);
            print("after");
          }
        }
        run Main;
        """), encoding="utf-8")
    r = sage("run", "main.sg", cwd=tmp_path)
    stdout, stderr = out(r)
    assert (stdout, stderr, r.returncode) == ("before\na\ufffdb\ufffdc\nafter\n", "", 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="address-space limit (RLIMIT_AS) is Linux's")
def test_out_of_memory_is_a_catchable_runtime_error(tmp_path: Path) -> None:
    (tmp_path / "main.sg").write_text(textwrap.dedent("""\
        fn grow(s: String) -> String {
          let t = s;
          let i = 0;
          while i < 40 {
            t = t ++ t;
            i = i + 1;
          }
          t
        }

        agent Main {
          on start {
            let r = grow("ab") catch(e) { print("in a call: {e}"); "" };
            let big = "ab";
            let n = 0;
            while n < 40 {
              big = (big ++ big) catch(e) { print("in place: {e}"); n = 40; "" };
              n = n + 1;
            }
            let w = grow("cd");
          }
          on error(e) {
            print("on error: {e}");
          }
        }
        run Main;
        """), encoding="utf-8")
    r = sage("run", "main.sg", cwd=tmp_path, limit_memory=True)
    stdout, stderr = out(r)
    assert stdout == ("in a call: Runtime error: out of memory\nin place: Runtime error: out of memory\n"
                      "on error: Runtime error: out of memory\n"), stderr
    assert r.returncode == 1
    assert stderr.startswith("error: unhandled error in agent Main#0: Runtime error: out of memory\n")
