"""Every example of docs/guide.md runs and prints what the guide shows.

The guide marks each file it shows with `<!-- file: PATH -->` on the line above the code block; those files
are written, in order, into one scratch directory. A `console` block lists commands as `$ sage …` lines, each
followed by the output it prints (stdout and stderr, interleaved as on a terminal); the commands run in the
scratch directory, in document order, and their output must match. `$ cd DIR` changes the directory for the
rest of its block; `$ echo $?` prints the previous command's exit code; `NAME=value` before `sage` sets an
environment variable. A Sage file that no command runs, checks or tests is checked: it must check clean.
Test durations (`[0.31s]`) are compared as `[…s]`.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "guide.md"
FILE_MARKER = re.compile(r"^<!-- file: (\S+) -->$")
DURATION = re.compile(r"\[\d+\.\d\ds\]")


class Block:
    __slots__ = ("language", "text", "file", "line")

    def __init__(self, language: str, text: str, file: str | None, line: int) -> None:
        self.language = language
        self.text = text
        self.file = file
        self.line = line


def guide_blocks() -> list[Block]:
    blocks: list[Block] = []
    lines = GUIDE.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            language = lines[i][3:].strip()
            marker = FILE_MARKER.match(lines[i - 1]) if i > 0 else None
            end = lines.index("```", i + 1)
            blocks.append(Block(language, "\n".join(lines[i + 1:end]) + "\n", marker and marker.group(1), i + 1))
            i = end + 1
        else:
            i += 1
    return blocks


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SAGE_") and k not in ("NO_COLOR", "FORCE_COLOR", "OPENAI_API_KEY")}
    # `python3` in the guide's grove.toml must be this interpreter, the one with sagepy's dependencies.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env.update(PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1", SAGE_CACHE_DIR=str(tmp_path / "cache"),
               PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}")
    return env


def _commands(text: str) -> list[tuple[str, str]]:
    """(command line, expected output) pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:], []))
        else:
            assert pairs, f"console block starts with output, not a command: {line!r}"
            pairs[-1][1].append(line)
    return [(command, "".join(out + "\n" for out in lines)) for command, lines in pairs]


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in DURATION.sub("[…s]", text).splitlines()).strip("\n")


def test_every_sage_block_is_a_file() -> None:
    unnamed = [b.line for b in guide_blocks() if b.language == "sage" and b.file is None]
    assert not unnamed, f"docs/guide.md: Sage blocks without `<!-- file: … -->` above them, at lines {unnamed}"


def test_guide_examples(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _environment(tmp_path)
    written: list[Path] = []
    covered: set[Path] = set()
    failures: list[str] = []
    status = 0
    for block in guide_blocks():
        if block.file:
            path = work / block.file
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text, encoding="utf-8")
            written.append(path)
        if block.language != "console":
            continue
        cwd = work
        for command, expected in _commands(block.text):
            words = shlex.split(command)
            if words[0] == "cd":
                cwd = cwd / words[1]
                continue
            if words == ["echo", "$?"]:
                output = f"{status}\n"
            else:
                run_env = dict(env)
                while "=" in words[0]:
                    name, value = words.pop(0).split("=", 1)
                    run_env[name] = value
                assert words[0] == "sage", f"guide line {block.line}: only `sage` commands run: {command}"
                result = subprocess.run([sys.executable, "-m", "sagepy", *words[1:]], cwd=cwd, env=run_env,
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
                status, output = result.returncode, result.stdout
                targets = [cwd / w for w in words[2:] if (cwd / w).exists()] or [cwd]
                covered.update(p for p in written if any(p.is_relative_to(t) for t in targets))
            if _normalise(output) != _normalise(expected):
                failures.append(f"guide block at line {block.line}: `{command}` printed:\n{output}\n"
                                f"the guide shows:\n{expected}")
    for path in written:
        if path.suffix == ".sg" and path not in covered:
            result = subprocess.run([sys.executable, "-m", "sagepy", "check", str(path)], cwd=work, env=env,
                                    capture_output=True, text=True, timeout=120)
            if result.returncode != 0:
                failures.append(f"{path.relative_to(work)} does not check clean:\n{result.stderr}")
    assert not failures, "\n\n".join(failures)
