"""`sage test` as a user runs it: results, details, summary, exit codes, mocks, timeouts, JUnit, pytest plugin."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent


def sage(*args: str, cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "sagepy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return tmp_path


GROVE = """\
    [project]
    name = "t"

    [tools.Tracker]
    command = "this-command-does-not-exist-anywhere"
    """

MAIN = """\
    record Issue { id: Int, title: String }

    tool Tracker {
        #[mcp_name = "search-issues"]
        fn search(repo: String) -> List<Issue>
        fn count(repo: String) -> String
    }

    agent Leaf {
        n: Int
        on start {
            let answer = try divine("leaf {self.n}");
            print("leaf got {answer}");
            yield(answer);
        }
    }

    agent Middle {
        on start {
            let leaf = summon Leaf { n: 2 };
            let r = try await leaf;
            yield("middle: " ++ r);
        }
    }

    agent Searcher {
        use Tracker
        on start {
            let issues = try Tracker.search("acme");
            yield(len(issues));
        }
        on error(e) {
            yield(-1);
        }
    }

    agent Sleeper {
        on start { sleep_ms(5000); yield(1); }
    }

    agent Main { on start { yield(0); } }
    run Main;
    """


def test_passing_failing_and_summary(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "fifo order of divine mocks" {
            mock divine -> "first";
            mock divine -> "second";
            let a = try divine("x");
            let b = try divine("y");
            assert_eq(a ++ b, "firstsecond");
        }

        test "mocks reach agents two levels deep" {
            mock divine -> "deep";
            let r = try await summon Middle {};
            assert_eq(r, "middle: deep");
        }

        test "a failing assertion shows values and source" {
            print("some output");
            assert_eq(1 + 1, 3);
        }
        """})
    r = sage("test", cwd=root)
    lines = r.stdout.splitlines()
    assert lines[0] == "running 3 tests from 1 file"
    assert lines[1] == "PASS src/main_test.sg::fifo order of divine mocks"
    assert lines[2] == "PASS src/main_test.sg::mocks reach agents two levels deep"
    assert lines[3] == "FAIL src/main_test.sg::a failing assertion shows values and source"
    assert lines[4] == "    assert_eq failed at src/main_test.sg:17:5"
    assert lines[5] == "      actual:   2"
    assert lines[6] == "      expected: 3"
    assert lines[7] == "      17 |     assert_eq(1 + 1, 3);"
    assert lines[8] == "    captured output:"
    assert lines[9] == "      | some output"
    assert lines[10:14] == ["", "failures:", "    src/main_test.sg::a failing assertion shows values and source",
                            "rerun them with: sage test --lf"]
    assert lines[14] == ""
    assert lines[15].startswith("test result: FAILED. 2 passed, 1 failed, 0 skipped [")
    assert r.returncode == 1


def test_typed_tool_mocks_never_start_the_server(tmp_path: Path) -> None:
    """grove.toml points at a command that does not exist: any real call would fail to connect."""
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "record return from a JSON string mock" {
            mock tool Tracker.search -> '[{"id": 7, "title": "Crash"}, {"id": 8, "title": "Hang"}]';
            let issues = try Tracker.search("acme");
            assert_eq(issues, [Issue { id: 7, title: "Crash" }, Issue { id: 8, title: "Hang" }]);
        }

        test "string return from a non-string mock" {
            mock tool Tracker.count -> 42;
            assert_eq(try Tracker.count("acme"), "42");
        }

        test "agent sees the typed mock" {
            mock tool Tracker.search -> [];
            assert_eq(try await summon Searcher {}, 0);
        }

        test "a fail mock goes to on error" {
            mock tool Tracker.search -> fail("tracker is down");
            assert_eq(try await summon Searcher {}, -1);
        }

        test "a fail mock is an MCP tool error" {
            mock tool Tracker.search -> fail("down");
            let e = Tracker.search("x") catch(e) { [] };
            let msg = "x" catch { "y" };
            assert_eq(len(e), 0);
            assert_eq(msg, "x");
        }
        """})
    r = sage("test", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "test result: ok. 5 passed, 0 failed, 0 skipped" in r.stdout
    assert not (root / ".sage" / "logs" / "Tracker.log").exists()


def test_mock_conversion_failure_names_mock_type_and_value(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "bad mock" {
            mock tool Tracker.search -> '[{"id": "seven"}]';
            let issues = try Tracker.search("acme");
            assert_eq(len(issues), 1);
        }
        """})
    r = sage("test", cwd=root)
    assert r.returncode == 1
    detail = r.stdout.splitlines()[2]
    assert detail.startswith("    mock for Tracker.search: cannot convert '[{\"id\": \"seven\"}]' to List<Issue>: ")


def test_empty_divine_queue_is_e054(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "no mock" {
            let r = try divine("hello");
            assert_eq(r, "never");
        }
        """})
    r = sage("test", cwd=root)
    assert r.returncode == 1
    assert "    error[E054]: LLM error: no mock left for divine (E054)" in r.stdout
    assert "      --> src/main_test.sg:2:17" in r.stdout


def test_call_depth_exceeded_points_at_the_call_that_overflowed(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        fn apply(f: Fn(Int) -> Int, n: Int) -> Int {
            return f(n);
        }

        fn down(n: Int) -> Int {
            return apply(down, n + 1);
        }

        test "overflows" {
            assert_eq(down(0), 1);
        }
        """})
    r = sage("test", cwd=root)
    assert r.returncode == 1
    assert "    error[E205]: Runtime error: call depth exceeded" in r.stdout
    location = next(line.strip() for line in r.stdout.splitlines() if line.strip().startswith("--> "))
    assert location in ("--> src/main_test.sg:2:12", "--> src/main_test.sg:6:12"), r.stdout


def test_timeout_fails_the_test_and_stops_its_agents(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE + "\n[test]\ntimeout_ms = 300\n", "src/main.sg": MAIN,
                              "src/main_test.sg": """\
        test "slow" {
            let r = try await summon Sleeper {};
            assert_eq(r, 1);
        }
        test "fast" {
            assert_eq(1, 1);
        }
        """})
    r = sage("test", cwd=root, timeout=30)
    assert r.returncode == 1
    assert "FAIL src/main_test.sg::slow\n    timed out after 300 ms" in r.stdout
    assert "PASS src/main_test.sg::fast" in r.stdout
    r = sage("test", "--timeout-ms", "200", cwd=root, timeout=30)
    assert "timed out after 200 ms" in r.stdout


def test_filter_file_list_serial_and_junit(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "alpha one" { assert_true(true); }
        @serial
        test "beta two" { assert_false(true); }
        test "alpha three" { assert_contains("haystack", "hay"); }
        """})
    listed = sage("test", "--list", cwd=root)
    assert listed.stdout.splitlines() == ["src/main_test.sg::alpha one", "src/main_test.sg::beta two",
                                          "src/main_test.sg::alpha three"]
    only = sage("test", "--filter", "alpha", "-v", cwd=root)
    assert only.returncode == 0
    assert only.stdout.startswith("running 2 tests from 1 file (1 deselected)\n")
    assert "test result: ok. 2 passed, 0 failed, 0 skipped" in only.stdout
    assert "beta two" not in only.stdout
    assert sage("test", "--filter", "nothing-like-this", cwd=root).stderr == "no tests matched\n"
    xml_path = tmp_path / "out.xml"
    everything = sage("test", "--serial", "--junit-xml", str(xml_path), cwd=root)
    assert everything.returncode == 1
    suite = ET.parse(xml_path).getroot().find("testsuite")
    assert suite.get("name") == "src/main_test.sg"
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert set(cases) == {"alpha one", "beta two", "alpha three"}
    failure = cases["beta two"].find("failure")
    assert failure.get("message") == "assert_false failed at src/main_test.sg:3:19"
    assert cases["alpha one"].find("failure") is None


def test_no_test_files(tmp_path: Path) -> None:
    r = sage("test", cwd=tmp_path)
    assert (r.returncode, r.stderr) == (1, "no test files found (files must end in _test.sg)\n")


def test_file_with_errors_reports_each_test_as_an_error(tmp_path: Path) -> None:
    root = project(tmp_path, {"src/bad_test.sg": """\
        test "x" { assert_eq(undefined_thing, 1); }
        test "y" { assert_eq(1, 1); }
        """, "src/broken_test.sg": """\
        test "p" { assert_eq(1, 1); }
        test "q" { let v = ; }
        """, "src/good_test.sg": """\
        test "fine" { assert_eq(1, 1); }
        """})
    xml_path = tmp_path / "out.xml"
    r = sage("test", "--junit-xml", str(xml_path), cwd=root)
    assert r.returncode == 1
    assert "error[E010]" in r.stderr and "error[E005]" in r.stderr
    assert r.stdout.splitlines()[:6] == ["running 5 tests from 3 files", "ERROR src/bad_test.sg::x",
                                         "ERROR src/bad_test.sg::y", "ERROR src/broken_test.sg::p",
                                         "ERROR src/broken_test.sg::q", "PASS src/good_test.sg::fine"]
    assert "1 passed, 4 failed, 0 skipped" in r.stdout
    suites = {s.get("name"): s for s in ET.parse(xml_path).getroot().findall("testsuite")}
    bad = suites["src/bad_test.sg"]
    assert [c.find("error").get("message") for c in bad.findall("testcase")] == ["file has errors"] * 2
    assert bad.get("errors") == "2" and bad.find("testcase/failure") is None


def test_pytest_plugin_collects_sage_tests(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE, "src/main.sg": MAIN, "src/main_test.sg": """\
        test "good" { assert_eq(2, 2); }
        test "bad" { assert_eq("a", "b"); }
        """})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "pytest", "--sage", "-q",
                        "-p", "no:cacheprovider", "src"], cwd=root, env=env, capture_output=True, text=True,
                       timeout=120)
    assert "1 failed, 1 passed" in r.stdout, r.stdout + r.stderr
    assert 'assert_eq failed at src/main_test.sg:2:14' in r.stdout
    assert 'actual:   "a"' in r.stdout
    quiet = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "src"], cwd=root,
                           env=env, capture_output=True, text=True, timeout=120)
    assert "no tests ran" in quiet.stdout


def test_real_llm_calls_the_configured_model_when_no_mock_is_left(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": GROVE + '\n[llm]\nmodel = "echo"\n', "src/main.sg": MAIN,
                              "src/main_test.sg": """\
        test "one mocked, one real" {
            mock divine -> "mocked";
            let a = try divine("first");
            let b = try divine("second");
            assert_eq(a, "mocked");
            assert_eq(b, "echo: second");
        }
        """})
    assert sage("test", "--real-llm", cwd=root).returncode == 0
    without = sage("test", cwd=root)
    assert without.returncode == 1
    assert "no mock left for divine (E054)" in without.stdout


SELECTION = """\
    test "alpha one" { assert_true(true); }
    test "beta two" { assert_false(true); }
    test "alpha three" { assert_eq(1, 1); }
    test "gamma" { assert_eq(1, 2); }
    """


def test_ids_as_paths_keyword_and_deselected_in_junit(tmp_path: Path) -> None:
    root = project(tmp_path, {"src/main_test.sg": SELECTION, "src/other_test.sg": 'test "alpha far" { }\n'})
    by_id = sage("test", "src/main_test.sg::beta two", "src/main_test.sg::alpha one", cwd=root)
    assert by_id.stdout.splitlines()[:3] == ["running 2 tests from 1 file (2 deselected)",
                                             "PASS src/main_test.sg::alpha one", "FAIL src/main_test.sg::beta two"]
    listed = sage("test", "--list", "-k", "alpha and not (far or ONE)", cwd=root)
    assert listed.stdout.splitlines() == ["src/main_test.sg::alpha three"]
    by_file = sage("test", "--list", "-k", "other", cwd=root)
    assert by_file.stdout.splitlines() == ["src/other_test.sg::alpha far"]
    assert sage("test", "-k", "alpha and", cwd=root).returncode == 2
    xml_path = tmp_path / "out.xml"
    sage("test", "-k", "alpha", "--junit-xml", str(xml_path), cwd=root)
    names = [c.get("name") for c in ET.parse(xml_path).getroot().iter("testcase")]
    assert names == ["alpha one", "alpha three", "alpha far"]
    assert all(s.get("skipped") == "0" for s in ET.parse(xml_path).getroot().iter("testsuite"))


def test_exitfirst_and_last_failed(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": '[project]\nname = "t"\n', "src/main_test.sg": SELECTION})
    first = sage("test", "--serial", "-x", cwd=root)
    assert first.returncode == 1
    assert "FAIL src/main_test.sg::beta two" in first.stdout
    assert "alpha three" not in first.stdout and "gamma" not in first.stdout
    everything = sage("test", cwd=root)
    assert everything.stdout.splitlines()[-6:-2] == ["failures:", "    src/main_test.sg::beta two",
                                                     "    src/main_test.sg::gamma", "rerun them with: sage test --lf"]
    again = sage("test", "--lf", cwd=root)
    assert again.stdout.splitlines()[0] == "running 2 tests from 1 file (2 deselected)"
    (root / "src" / "main_test.sg").write_text(SELECTION.replace("assert_false(true)", "assert_false(false)")
                                               .replace("assert_eq(1, 2)", "assert_eq(2, 2)"), encoding="utf-8")
    fixed = sage("test", "--lf", cwd=root)
    assert "test result: ok. 2 passed, 0 failed, 0 skipped" in fixed.stdout
    assert sage("test", "--lf", cwd=root).stdout.startswith("running 4 tests from 1 file\n")


def test_pytest_plugin_and_sage_test_agree_on_counts(tmp_path: Path) -> None:
    root = project(tmp_path, {"src/main_test.sg": SELECTION, "src/bad_test.sg": 'test "u" { assert_eq(nope, 1); }\n'
                              'test "v" { }\n'})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for selection in ([], ["-k", "alpha or bad"]):
        ours = sage("test", *selection, cwd=root).stdout.splitlines()[-1]
        theirs = subprocess.run([sys.executable, "-m", "pytest", "--sage", "-q", "-p", "no:cacheprovider", "src",
                                 *selection], cwd=root, env=env, capture_output=True, text=True,
                                timeout=120).stdout.splitlines()[-1]
        passed = int(ours.split(". ")[1].split(" passed")[0])
        failed = int(ours.split(", ")[1].split(" failed")[0])
        assert f"{failed} failed, {passed} passed" in theirs, (ours, theirs)


def test_colour_on_request_only(tmp_path: Path) -> None:
    root = project(tmp_path, {"src/main_test.sg": 'test "a" { assert_eq(1, 1); }\n'})
    plain = sage("test", cwd=root)
    assert "\x1b[" not in plain.stdout
    forced = sage("test", "--color", "always", cwd=root)
    assert "\x1b[" in forced.stdout and "PASS" in forced.stdout
    env_forced = subprocess.run([sys.executable, "-m", "sagepy", "test"], cwd=root, capture_output=True, text=True,
                                env={**{k: v for k, v in os.environ.items() if k != "NO_COLOR"},
                                     "FORCE_COLOR": "1", "PYTHONPATH": str(REPO)}, timeout=120)
    assert "\x1b[" in env_forced.stdout
    assert "\x1b[" not in sage("test", "--no-color", cwd=root).stdout


def test_no_recursion_outside_a_project(tmp_path: Path) -> None:
    root = project(tmp_path, {"top_test.sg": 'test "top" { }\n', "deep/other_test.sg": 'test "deep" { }\n'})
    assert sage("test", "--list", cwd=root).stdout.splitlines() == ["top_test.sg::top"]
    inside = project(tmp_path / "proj", {"grove.toml": "", "src/a_test.sg": 'test "a" { }\n',
                                         "src/lib/b_test.sg": 'test "b" { }\n',
                                         "src/node_modules/c_test.sg": 'test "c" { }\n',
                                         "src/.venv/d_test.sg": 'test "d" { }\n',
                                         "src/dist/e_test.sg": 'test "e" { }\n'})
    assert sage("test", "--list", cwd=inside).stdout.splitlines() == ["src/a_test.sg::a", "src/lib/b_test.sg::b"]


def test_last_failed_list_lives_in_a_private_sage_directory(tmp_path: Path) -> None:
    root = project(tmp_path, {"grove.toml": "", "src/main_test.sg": 'test "bad" { assert_eq(1, 2); }\n'})
    sage("test", cwd=root)
    assert (root / ".sage" / "lastfailed").read_text(encoding="utf-8").count("src/main_test.sg::bad") == 1
    assert (root / ".sage").stat().st_mode & 0o777 == 0o700


def test_deep_programs_check_and_test_without_recursion_errors(tmp_path: Path) -> None:
    # SPEC §13.3: whatever the parser accepts (nesting up to 1,000 levels) is checked and run; §4.3: 5,000
    # nested Sage calls in a test and in an agent it summons
    nested_ifs = "if true { " * 990 + "x = x + 1;" + " }" * 990
    plus_chain = " + ".join(["1"] * 999)
    root = project(tmp_path, {"grove.toml": '[project]\nname = "t"\n', "src/deep_test.sg": f"""\
        fn depth(n: Int) -> Int {{
            if n == 0 {{
                return 0;
            }}
            return 1 + depth(n - 1);
        }}

        agent Deep {{
            n: Int
            on start {{ yield(depth(self.n)); }}
        }}

        test "calls" {{ assert_eq(depth(5000), 5000); }}
        test "calls in an agent" {{ assert_eq(try await summon Deep {{ n: 5000 }}, 5000); }}
        test "nesting" {{
            let x = 0;
            {nested_ifs}
            assert_eq(x, 1);
            assert_eq({plus_chain}, 999);
        }}
        """})
    checked = sage("check", cwd=root)
    assert checked.returncode == 0, checked.stderr
    assert "internal error" not in checked.stderr
    tested = sage("test", cwd=root)
    assert "3 passed, 0 failed" in tested.stdout, tested.stdout + tested.stderr

