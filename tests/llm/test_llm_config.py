"""Where LLM settings come from (SPEC §4.10, §11, §12): environment over grove.toml's [llm] over defaults."""
from __future__ import annotations

import subprocess
import sys

import pytest

from sagepy.llm import LlmConfig
from sagepy.llm.config import DEFAULT_MODEL, DEFAULT_URL

KEY = "sk-config-secret-0123456789"


def test_defaults_with_nothing_set():
    c = LlmConfig.resolve({}, {})
    assert (c.url, c.model, c.api_key, c.temperature, c.max_tokens) == (DEFAULT_URL, DEFAULT_MODEL, None,
                                                                        None, None)
    assert (c.timeout_ms, c.retries, c.infer_retries) == (120000, 2, 3)
    assert c.configured is False
    assert c.error is None
    assert DEFAULT_URL == "https://api.openai.com/v1" and DEFAULT_MODEL == "gpt-4o-mini"


def test_section_over_defaults():
    section = {"url": "http://llm.local/v1", "model": "m1", "temperature": 1, "max_tokens": 50,
               "timeout_ms": 900, "retries": 0, "infer_retries": 5}
    c = LlmConfig.resolve(section, {})
    assert (c.url, c.model, c.temperature, c.max_tokens) == ("http://llm.local/v1", "m1", 1.0, 50)
    assert isinstance(c.temperature, float)
    assert (c.timeout_ms, c.retries, c.infer_retries) == (900, 0, 5)
    assert c.configured is True


def test_environment_over_section():
    section = {"url": "http://llm.local/v1", "model": "m1", "temperature": 0.1, "max_tokens": 50,
               "timeout_ms": 900, "retries": 0, "infer_retries": 5}
    env = {"SAGE_LLM_URL": "http://env.local/v1", "SAGE_MODEL": "m2", "SAGE_TEMPERATURE": "0.7",
           "SAGE_MAX_TOKENS": "99", "SAGE_LLM_TIMEOUT_MS": "1234", "SAGE_LLM_RETRIES": "4",
           "SAGE_INFER_RETRIES": "2", "SAGE_API_KEY": KEY}
    c = LlmConfig.resolve(section, env)
    assert (c.url, c.model, c.temperature, c.max_tokens) == ("http://env.local/v1", "m2", 0.7, 99)
    assert (c.timeout_ms, c.retries, c.infer_retries, c.api_key) == (1234, 4, 2, KEY)


def test_empty_environment_values_count_as_unset():
    c = LlmConfig.resolve({"model": "m1"}, {"SAGE_MODEL": "", "SAGE_API_KEY": ""})
    assert c.model == "m1"
    assert c.api_key is None


def test_api_key_env_names_the_variable_holding_the_key():
    c = LlmConfig.resolve({"api_key_env": "MY_LLM_KEY"}, {"MY_LLM_KEY": KEY, "SAGE_API_KEY": "other"})
    assert c.api_key == KEY
    c = LlmConfig.resolve({"api_key_env": "MY_LLM_KEY"}, {})
    assert (c.api_key, c.key_env) == (None, "MY_LLM_KEY")


@pytest.mark.parametrize("provider, own", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_key_order_is_api_key_env_then_sage_api_key_then_the_providers_own(provider: str, own: str) -> None:
    section = {"provider": provider, "api_key_env": "MY_LLM_KEY"}
    every = {"MY_LLM_KEY": "k1", "SAGE_API_KEY": "k2", own: "k3"}
    found = []
    for unset in ([], ["MY_LLM_KEY"], ["MY_LLM_KEY", "SAGE_API_KEY"]):
        c = LlmConfig.resolve(section, {k: v for k, v in every.items() if k not in unset})
        found.append((c.api_key, c.key_env))
    assert found == [("k1", "MY_LLM_KEY"), ("k2", "SAGE_API_KEY"), ("k3", own)]


def test_configured_by_url_key_section_or_echo():
    assert LlmConfig.resolve({}, {"SAGE_LLM_URL": "http://x/v1"}).configured
    assert LlmConfig.resolve({}, {"SAGE_API_KEY": KEY}).configured
    assert LlmConfig.resolve({"model": "gpt-4o"}, {}).configured
    assert LlmConfig.resolve({}, {"SAGE_MODEL": "echo"}).configured
    assert not LlmConfig.resolve({}, {"SAGE_MODEL": "gpt-4o"}).configured


def test_malformed_values_are_kept_as_error_not_raised():
    c = LlmConfig.resolve({"retries": 1}, {"SAGE_TEMPERATURE": "hot"})
    assert c.error == "invalid SAGE_TEMPERATURE 'hot': expected a number"
    assert c.temperature is None and c.retries == 1
    assert LlmConfig.resolve({}, {"SAGE_INFER_RETRIES": "0"}).error == \
        "invalid SAGE_INFER_RETRIES '0': expected an integer >= 1"
    assert LlmConfig.resolve({"retries": -1}, {}).error == "invalid [llm] retries '-1': expected an integer >= 0"
    assert LlmConfig.resolve({"timeout_ms": True}, {}).error == "invalid [llm] timeout_ms: expected an integer >= 1"
    assert LlmConfig.resolve({"api_key_env": 3}, {}).error.startswith("invalid [llm] api_key_env")


def test_repr_hides_the_key():
    c = LlmConfig.resolve({}, {"SAGE_API_KEY": KEY})
    assert KEY not in repr(c)
    assert "api_key=<set>" in repr(c)


def test_importing_the_package_does_not_import_httpx():
    code = "import sys, sagepy.llm; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
