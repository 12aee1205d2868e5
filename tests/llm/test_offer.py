"""What the model is offered (SPEC §4.12 "What the model sees"): names, descriptions and parameter schemas."""
from __future__ import annotations

from sagepy.core import types as T
from sagepy.check.symbols import ToolRef
from sagepy.llm.offer import NAME_LIMIT, Offer, OfferedFunction, unique_names


def test_names_are_sanitized_cut_and_made_unique_in_offer_order() -> None:
    long = "srv__" + "x" * 80
    names = unique_names(["Fs__read", "time__get.time", "a b__c", "a_b__c", long, long, "Fs__read"])
    assert names[:4] == ["Fs__read", "time__get_time", "a_b__c", "a_b__c_2"]
    assert names[4] == long[:NAME_LIMIT]
    assert names[5] == long[:NAME_LIMIT - 2] + "_2" and len(names[5]) == NAME_LIMIT
    assert names[6] == "Fs__read_2"


def typed(tool: str, fn: str, params: list[tuple[str, T.Type]], doc: str | None = None,
          builtin: bool = False) -> OfferedFunction:
    info = ToolRef(tool, fn, fn, [p for p, _ in params], [t for _, t in params], T.STRING, builtin, doc)
    return OfferedFunction.typed(info, info.param_types, doc)


def test_definitions_of_typed_and_dynamic_functions() -> None:
    asked: list[tuple[str, str]] = []

    def remote_description(tool: str, remote: str) -> str | None:
        asked.append((tool, remote))
        return "Find events." if remote == "find" else None

    listing = {"name": "get.time", "description": "The time.",
               "inputSchema": {"type": "object", "properties": {"tz": {"type": "string", "format": "tz"}}}}
    offer = Offer([typed("Cal", "find", [("day", T.STRING), ("limit", T.OptionT(T.INT))]),
                   typed("Cal", "busy", [], doc="Whether the day is full.")],
                  ["mcp:1"], lambda handle: [OfferedFunction.dynamic(handle, "clock", listing)], remote_description)
    assert offer.names == ["Cal__find", "Cal__busy", "clock__get_time"]
    assert asked == []   # nothing is described until a request needs the definitions
    find, busy, clock = (d["function"] for d in offer.definitions())
    assert asked == [("Cal", "find")]
    assert find["description"] == "Find events." and find["strict"] is True
    assert find["parameters"]["required"] == ["day", "limit"]
    assert find["parameters"]["properties"]["limit"] == {"anyOf": [{"type": "integer"}, {"type": "null"}]}
    assert busy == {"name": "Cal__busy", "description": "Whether the day is full.",
                    "parameters": {"type": "object", "properties": {}, "required": [],
                                   "additionalProperties": False}, "strict": True}
    assert clock["description"].startswith("The time.") and "tz" in clock["description"]   # the format hint
    assert "format" not in str(clock["parameters"])
    assert offer.get("clock__get_time").remote == "get.time"
    assert offer.name_of("Cal", "busy") == "Cal__busy" and offer.name_of("Cal", "gone") is None


def test_a_dynamic_listing_is_taken_again_on_refresh() -> None:
    listings = [[{"name": "a"}], [{"name": "a"}, {"name": "b"}]]
    offer = Offer([], ["mcp:1"], lambda h: [OfferedFunction.dynamic(h, "mcp1", item) for item in listings[0]],
                  lambda tool, remote: None)
    assert offer.names == ["mcp1__a"]
    listings.pop(0)
    offer.refresh()
    assert offer.names == ["mcp1__a", "mcp1__b"]
    assert [d["function"]["name"] for d in offer.definitions()] == ["mcp1__a", "mcp1__b"]
