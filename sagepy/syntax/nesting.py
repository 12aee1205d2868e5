"""The nesting limit (SPEC §13.3): an expression, block, type or pattern nested, or an operator chain chained,
deeper than 1,000 levels is E005 `nesting too deep`.

The limit protects every later stage: the checker and the interpreter walk the AST recursively, so the parser
refuses a tree they could not walk. The depth is measured on Lark's parse tree with an explicit stack (the
tree of an accepted-by-Lark input can be 20,000 levels deep, far past Python's recursion limit).

A level is one node that nests in the AST: an operator application, a postfix `.field` or call, a bracketed or
braced construct, a block, an `else if` link, a compound type or pattern. Rules that only gather lists
(arguments, match arms, `use` path segments, parameters) are not levels: the AST holds them flat.
"""
from __future__ import annotations

from lark import Tree

NESTING_LIMIT = 1000
NESTING_MESSAGE = f"nesting too deep (more than {NESTING_LIMIT} levels)"

_LEVELS = frozenset({
    # operators and postfix chains
    "binop", "neg", "not_", "try_expr", "await_expr", "await_timeout", "fail_expr", "field", "tuple_index",
    "call", "catch_plain", "catch_bind", "catch_prefix",
    # bracketed and braced expressions, closures, blocks
    "paren", "tuple_lit", "list_lit", "map_lit", "record_lit", "summon_expr", "closure_expr", "closure_block",
    "match_expr", "retry_expr", "divine_expr", "infer_expr", "send_expr", "reply_expr", "yield_expr",
    "trace_expr", "block",
    # types, patterns and `let`/`for` targets
    "t_list", "t_option", "t_oracle", "t_map", "t_result", "t_fn", "t_tuple", "t_named",
    "pat_tuple", "pat_path", "pat_variant", "target_tuple",
})


# Left-recursive rules: a long chain of them is one deep spine in the tree.
_LEFT_CHAINS = frozenset({"binop", "field", "tuple_index", "call"})


def first_token_too_deep(tree: Tree) -> tuple | None:
    """The span of the first token (in source order) of the first construct nested past the limit, or None."""
    candidates: list[tuple] = []
    # (node, level of its parent, parent is an `if`, node is the left operand of a link of a chain)
    stack: list[tuple[Tree, int, bool, bool]] = [(tree, 0, False, False)]
    while stack:
        node, depth, parent_is_if, continues_chain = stack.pop()
        if node.data == "if_stmt":
            level = depth + 1 if parent_is_if else depth   # only an `else if` link nests
        else:
            level = depth + 1 if node.data in _LEVELS else depth
        in_chain = node.data in _LEFT_CHAINS
        if in_chain and not continues_chain:
            span = _chain_link_past_limit(node, level)
            if span is not None:
                candidates.append(span)
        if level > NESTING_LIMIT:
            if not (in_chain and continues_chain):   # a chain is reported from its top
                candidates.append(_start_span(node))
            continue
        is_if = node.data == "if_stmt"
        for i, child in enumerate(node.children):
            if isinstance(child, Tree):
                stack.append((child, level, is_if, in_chain and i == 0))
    spans = [c for c in candidates if c is not None]
    return min(spans) if spans else None


def _chain_link_past_limit(top: Tree, level: int) -> tuple | None:
    """A left-leaning chain (`a + b + c …`, `x.f.g …`, `f()()…`) has its first link deepest in the tree. Read
    in source order, the chain goes past the limit at the link that makes it one level too long: that one is
    reported, at its operator (for `.` and calls: right after the operand they apply to)."""
    spine = [top]
    while isinstance(spine[-1].children[0], Tree) and spine[-1].children[0].data in _LEFT_CHAINS:
        spine.append(spine[-1].children[0])
    if level + len(spine) - 1 <= NESTING_LIMIT:
        return None
    link = spine[-1 - max(0, NESTING_LIMIT + 1 - level)]
    if link.data == "binop":
        operator = link.children[1]
        return (operator.line, operator.column, operator.end_line, operator.end_column)
    operand = link.children[0].meta
    return (operand.end_line, operand.end_column, operand.end_line, operand.end_column + 1)


def _start_span(node: Tree) -> tuple | None:
    """Where the node's match begins: its first token, `(` and `{` included."""
    meta = node.meta
    if getattr(meta, "empty", True):
        return None
    return (meta.line, meta.column, meta.line, meta.column + 1)
