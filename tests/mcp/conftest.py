"""Fixtures of the MCP tests (helpers and the description of the setup are in mcp_helpers.py)."""
from __future__ import annotations

import pytest

from mcp_helpers import Managers


@pytest.fixture
def managers(tmp_path):
    made = Managers(str(tmp_path))
    yield made
    made.close()


@pytest.fixture(scope="module")
def module_managers(tmp_path_factory):
    made = Managers(str(tmp_path_factory.mktemp("project")))
    yield made
    made.close()
