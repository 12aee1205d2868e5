"""The LLM client behind `divine`/`infer` and MCP sampling (SPEC §4.10).

Importing this package is cheap: httpx is imported by the first request that goes over the network.
"""
from .client import LlmClient
from .config import LlmConfig

__all__ = ["LlmClient", "LlmConfig"]
