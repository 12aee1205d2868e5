"""A small issue-tracker MCP server for the triage example: two tools over stdio, data in memory.

It stands in for a real tracker so that the example runs offline; the Sage program does not know the
difference.
"""
from pydantic import BaseModel

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("tracker")

ISSUES = {
    "acme/widgets": [
        {"id": 7, "title": "Crash on save", "labels": ["bug"], "state": "open"},
        {"id": 9, "title": "Slow start-up", "labels": ["performance"], "state": "open"},
        {"id": 3, "title": "Typo in docs", "labels": ["docs"], "state": "closed"},
    ],
}
COMMENTS: list[tuple[str, int, str]] = []


class Issue(BaseModel):
    id: int
    title: str
    labels: list[str]


@server.tool(name="search-issues", description="Issues of a repository in a state (open or closed).",
             annotations=ToolAnnotations(read_only_hint=True))
def search_issues(repo: str, state: str) -> list[Issue]:
    return [Issue(id=i["id"], title=i["title"], labels=i["labels"])
            for i in ISSUES.get(repo, []) if i["state"] == state]


@server.tool(name="comment-on-issue", description="Add a comment to an issue.")
def comment_on_issue(repo: str, id: int, body: str) -> str:
    COMMENTS.append((repo, id, body))
    return f"comment {len(COMMENTS)} added to {repo}#{id}"


if __name__ == "__main__":
    server.run()
