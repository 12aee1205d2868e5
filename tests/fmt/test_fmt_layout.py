"""`sage fmt`'s layout (SPEC §19.1), input by input: each output is the canonical text, formats to itself, and
parses to the same AST as its input (format_source checks that itself before returning)."""
from __future__ import annotations

import textwrap

import pytest

from sagepy.fmt import SyntaxErrors, UnsafeFormat, _check, format_source
from sagepy.syntax.parser import parse_source
from sagepy.syntax.trivia import scan_comments


def fmt(text: str) -> str:
    out = format_source(textwrap.dedent(text).lstrip("\n"), "case.sg")
    assert format_source(out, "case.sg") == out, "formatting is not idempotent"
    return out


def canonical(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CASES = {
    "spacing and blocks": (
        "fn f(a:Int,b :Int)->Int{let x=a+b*2;return x;}\n",
        """
        fn f(a: Int, b: Int) -> Int {
            let x = a + b * 2;
            return x;
        }
        """),
    "blank lines kept, runs collapsed, none at block edges": (
        "fn f() -> Int {\n\n    let a = 1;\n\n\n\n    let b = 2;\n    a + b\n\n}\n",
        """
        fn f() -> Int {
            let a = 1;

            let b = 2;
            a + b
        }
        """),
    "mod/use stay together, one blank line between items and before run": (
        "mod a;\nuse a::{x, y as z};\nuse a::*;\nrecord P { x: Int }\nagent Main { on start { yield(0); } }\nrun Main;",
        """
        mod a;
        use a::{x, y as z};
        use a::*;

        record P {
            x: Int,
        }

        agent Main {
            on start {
                yield(0);
            }
        }

        run Main;
        """),
    "one-line record literal and map, empty ones": (
        "fn f() -> Unit { let p = P{x:1,y:2}; let m = {\"a\":1}; let e = {}; let q = Q{}; }\n",
        """
        fn f() -> Unit {
            let p = P { x: 1, y: 2 };
            let m = { "a": 1 };
            let e = {};
            let q = Q {};
        }
        """),
    "a list that does not fit is broken with a trailing comma": (
        "fn f() -> Unit { let xs = [\"aaaaaaaaaaaaaaaaaaaa\", \"bbbbbbbbbbbbbbbbbbbbbbbbb\", \"cccccccccccccccccccccccc\", "
        "\"dddd\"]; }\n",
        """
        fn f() -> Unit {
            let xs = [
                "aaaaaaaaaaaaaaaaaaaa",
                "bbbbbbbbbbbbbbbbbbbbbbbbb",
                "cccccccccccccccccccccccc",
                "dddd",
            ];
        }
        """),
    "retry arguments break without a trailing comma (the grammar has none)": (
        "fn f() -> Int fails { retry(3, delay: a_rather_long_name_for_the_delay_between_two_attempts_of_this_call_in_ms"
        ", on: [Timeout]) { 1 } }\n",
        """
        fn f() -> Int fails {
            retry(
                3,
                delay: a_rather_long_name_for_the_delay_between_two_attempts_of_this_call_in_ms,
                on: [Timeout]
            ) {
                1
            }
        }
        """),
    "a long concatenation breaks before its operators": (
        "fn f() -> String { return \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\" ++ \"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\" ++ "
        "\"cccccccccccccccc\"; }\n",
        """
        fn f() -> String {
            return "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                ++ "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
                ++ "cccccccccccccccc";
        }
        """),
    "parentheses that precedence and position need are kept, others dropped": (
        "fn f(a: Int) -> Int { let x = (a + 1) * ((2)); let y = (match a { _ => 1 }) - 1;"
        " (match a { _ => 1 }) - 1; if (P { x: 1 }) == p { } let g = |x: Int| ({\"k\": x}); let h = (|x: Int| x) ; (fail e); a }\n",
        """
        fn f(a: Int) -> Int {
            let x = (a + 1) * 2;
            let y = match a {
                _ => 1,
            } - 1;
            (match a {
                _ => 1,
            }) - 1;
            if (P { x: 1 }) == p {}
            let g = |x: Int| ({ "k": x });
            let h = |x: Int| x;
            fail e;
            a
        }
        """),
    "a map or match in leading position": (
        "fn f() -> Unit { ({\"a\": 1}).len(); (match x { _ => m }).f(); }\nfn g() -> Int { (match x { _ => 1 }) }\n",
        """
        fn f() -> Unit {
            ({ "a": 1 }).len();
            (match x {
                _ => m,
            }).f();
        }

        fn g() -> Int {
            (match x {
                _ => 1,
            })
        }
        """),
    "literals, templates and strings exactly as written": (
        "fn f() -> Unit { let a = 0x; }\n".replace("0x", "007 + 1.50e3 + -9223372036854775808")
        + "fn g() -> String { \"{ {'a': 1}  }\\n\" ++ 'x  {y}'++\"two\nlines\" }\n",
        """
        fn f() -> Unit {
            let a = 007 + 1.50e3 + -9223372036854775808;
        }

        fn g() -> String {
            "{ {'a': 1}  }\\n" ++ 'x  {y}' ++ "two
        lines"
        }
        """),
    "doc comment, then attributes each on their own line, then the item": (
        "tool T {\n  /// Reads.\n  #[mcp_name(\"read-it\")] fn read(path: String) -> String\n"
        "  fn run(cmd: String) -> String;\n}\n"
        "agent A { @persistent n: Int, use T on start { } }\n@serial test 'x' { }\n",
        """
        tool T {
            /// Reads.
            #[mcp_name = "read-it"]
            fn read(path: String) -> String
            fn run(cmd: String) -> String
        }

        agent A {
            @persistent
            n: Int
            use T
            on start {}
        }

        @serial
        test 'x' {}
        """),
    "comments: own-line, trailing, before a closing brace, in a broken list": (
        "// head\n\nfn f() -> Int { // opens\n  // before a\n  let a = 1; // after a\n  let xs = [1, // one\n 2];\n"
        "  /* block */ a\n  // last\n}\n// tail\n",
        """
        // head

        fn f() -> Int { // opens
            // before a
            let a = 1; // after a
            let xs = [
                1, // one
                2,
            ];
            /* block */
            a
            // last
        }
        // tail
        """),
    "contextual words as names, and the statements that use them": (
        "fn f(message: Int, start: Int) -> Int { let mock = 1; let timeout = 2; message + start + mock + timeout }\n"
        "test \"t\" { mock divine -> call T.f(1), call T.g(\"x\"); mock tool T.f -> fail \"no\"; mock elicit -> decline;"
        " let a = await w timeout(5) catch(e) { 0 }; }\n",
        """
        fn f(message: Int, start: Int) -> Int {
            let mock = 1;
            let timeout = 2;
            message + start + mock + timeout
        }

        test "t" {
            mock divine -> call T.f(1), call T.g("x");
            mock tool T.f -> fail "no";
            mock elicit -> decline;
            let a = await w timeout(5) catch(e) {
                0
            };
        }
        """),
    "every other item and statement": (
        "pub const N: Int = 3;\nextern fn e<T>(x: T) -> T fails\nenum E<T> { A, B(T) }\n"
        "protocol P { A -> B: Int; B -> A: String }\nhandler H handles Infer { model: \"m\", temperature: -1 }\n"
        "supervisor S { strategy: OneForOne, children { W { restart: Permanent, handler Infer: H, x: 1 } V { } } }\n"
        "agent W receives Int follows P as a { on message(m: Int) { reply(m); } on error(e: Error) { } "
        "on stop { checkpoint(); } }\n"
        "fn g() -> Unit { for (k, v) in m { continue; } while true { break; } loop { span \"s\" { trace(1); } }"
        " x = 2; let (a, b): (Int, Int) = (1, 2,); send(w, 1); let r = receive(); if a { } else if b { } else { }"
        " match r { Some(x) | None => {} , _ => return } let d = infer('p' -> Int, tools: [T], max_steps: 2); ; }\n",
        """
        pub const N: Int = 3;

        extern fn e<T>(x: T) -> T fails;

        enum E<T> {
            A,
            B(T),
        }

        protocol P {
            A -> B: Int,
            B -> A: String,
        }

        handler H handles Infer {
            model: "m",
            temperature: -1,
        }

        supervisor S {
            strategy: OneForOne,
            children {
                W {
                    restart: Permanent,
                    handler Infer: H,
                    x: 1,
                }
                V {}
            }
        }

        agent W receives Int follows P as a {
            on message(m: Int) {
                reply(m);
            }
            on error(e: Error) {}
            on stop {
                checkpoint();
            }
        }

        fn g() -> Unit {
            for (k, v) in m {
                continue;
            }
            while true {
                break;
            }
            loop {
                span "s" {
                    trace(1);
                }
            }
            x = 2;
            let (a, b): (Int, Int) = (1, 2);
            send(w, 1);
            let r = receive();
            if a {} else if b {} else {}
            match r {
                Some(x) | None => {}
                _ => return,
            }
            let d = infer('p' -> Int, tools: [T], max_steps: 2);
        }
        """),
}


@pytest.mark.parametrize("name", list(CASES))
def test_layout(name: str) -> None:
    source, expected = CASES[name]
    assert fmt(source) == canonical(expected)


def test_a_file_ends_with_one_newline_and_an_empty_file_stays_empty() -> None:
    assert format_source("run Main;\n\n\n", "a.sg") == "run Main;\n"
    assert format_source("", "a.sg") == ""
    assert format_source("// only a comment", "a.sg") == "// only a comment\n"


def test_syntax_errors_are_raised_with_their_diagnostics() -> None:
    with pytest.raises(SyntaxErrors) as caught:
        format_source("fn f( {", "bad.sg")
    assert caught.value.diagnostics[0].code == "E005"
    assert caught.value.diagnostics[0].file == "bad.sg"


def test_the_safety_net_refuses_another_program_or_lost_comments() -> None:
    text = "fn f() -> Int { 1 } // one\n"
    items, _ = parse_source(text, "a.sg")
    comments = scan_comments(text)
    with pytest.raises(UnsafeFormat, match="formatting would change a.sg"):
        _check(items, comments, "fn f() -> Int { 2 } // one\n", "a.sg")
    with pytest.raises(UnsafeFormat, match="comments"):
        _check(items, comments, "fn f() -> Int { 1 }\n", "a.sg")
    _check(items, comments, "fn f() -> Int {\n    1\n} // one\n", "a.sg")


# Nodes printed as part of another (by the printer of their parent), not by a method of their own.
PARTS = {"Module", "FieldDecl", "VariantDecl", "Param", "ToolFn", "Attribute", "AgentField", "Handler",
         "ChildSpec", "TypeExpr", "Block", "TargetName", "TargetTuple", "MockCalls", "ClosureParam", "Arm",
         "ArmBreak", "ArmContinue", "ArmReturn", "DivineOption", "PatWild", "PatBind", "PatLiteral", "PatTuple",
         "PatVariant", "PatOr"}


def test_every_node_of_the_grammar_has_a_printer() -> None:
    """A node class added to the AST (a new construct of the grammar) fails here until the formatter prints
    it: `e_` for expressions, `s_` for statements, `i_` for items."""
    from sagepy.fmt.items import ItemPrinter
    from sagepy.syntax.ast import NODE_CLASSES
    unprinted = [name for name in NODE_CLASSES if name not in PARTS
                 and not any(hasattr(ItemPrinter, prefix + name) for prefix in ("e_", "s_", "i_"))]
    assert unprinted == []
    assert PARTS <= set(NODE_CLASSES)
