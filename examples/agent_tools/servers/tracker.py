"""A small issue-tracker MCP server for the agent_tools example: issues in memory, tools to search, read,
label and comment. It stands in for a real tracker so that the example runs offline."""
from pydantic import BaseModel

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

server = MCPServer("tracker")

ISSUES = {
    "acme/widgets": [
        {"id": 7, "title": "Crash on save", "body": "Saving a file with an emoji in its name crashes.",
         "labels": [], "state": "open"},
        {"id": 9, "title": "Slow start-up", "body": "Start-up takes 12 s since 2.3.", "labels": [], "state": "open"},
        {"id": 11, "title": "How do I export to CSV?", "body": "I cannot find the export button.", "labels": [],
         "state": "open"},
        {"id": 3, "title": "Typo in docs", "body": "'recieve' in the guide.", "labels": ["docs"], "state": "closed"},
    ],
}
LABELS = ("bug", "performance", "docs", "question")


class Issue(BaseModel):
    id: int
    title: str
    labels: list[str]


def _issue(repo: str, id: int) -> dict:
    for issue in ISSUES.get(repo, []):
        if issue["id"] == id:
            return issue
    raise ToolError(f"no issue #{id} in {repo}")


@server.tool(name="search-issues", description="Issues of a repository in a state (open or closed).",
             annotations=ToolAnnotations(read_only_hint=True))
def search_issues(repo: str, state: str) -> list[Issue]:
    return [Issue(id=i["id"], title=i["title"], labels=i["labels"])
            for i in ISSUES.get(repo, []) if i["state"] == state]


@server.tool(name="read-issue", description="The text of an issue.", annotations=ToolAnnotations(read_only_hint=True))
def read_issue(repo: str, id: int) -> str:
    return _issue(repo, id)["body"]


@server.tool(name="add-label", description="Add a label to an issue.",
             annotations=ToolAnnotations(idempotent_hint=True))
def add_label(repo: str, id: int, label: str) -> str:
    if label not in LABELS:
        raise ToolError(f"unknown label '{label}'; the labels are {', '.join(LABELS)}")
    issue = _issue(repo, id)
    if label not in issue["labels"]:
        issue["labels"].append(label)
    return f"#{id} is labelled {', '.join(issue['labels'])}"
