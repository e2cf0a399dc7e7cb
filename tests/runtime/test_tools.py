"""@tool's own arguments: checked where given, each error naming tool and the argument."""

from __future__ import annotations

import pytest

from otel_agents import Agent, tool


def lookup(city: str) -> str:
    """Look a city up."""
    return city


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: tool(description=3)(lookup), "tool: description= takes a string, not int"),
        (lambda: tool(lookup, description=b"x"), "tool: description= takes a string, not bytes"),
        (lambda: tool(name=5), "tool: name= takes a string, not int"),
        (lambda: tool(5), "tool: takes a function, not int"),
        (lambda: tool(int), "tool: 'int' has no signature to describe to a model"),
        (lambda: tool(len), "tool: 'len' takes obj by position only"),  # accepted, then failed at every call
        (lambda: tool(lambda city, /: city, name="where"), "takes city by position only"),
    ],
)
def test_a_wrong_argument_is_a_type_error_naming_tool(make, message):
    """description=3 was accepted (and sent to the model as a number); tool(int) raised inspect's
    'no signature found for builtin type', naming neither tool nor what to do."""
    with pytest.raises(TypeError, match=message):
        make()


def test_an_empty_name_is_refused_naming_name_not_the_functions_own():
    """tool(name="") fell back to the function's name and said "tool name '<lambda>': ..."."""
    with pytest.raises(ValueError, match=r"^tool: name= is empty"):
        tool(name="")
    with pytest.raises(ValueError, match=r"^tool: name= is empty"):
        tool(lambda city: city, name="")


def test_an_agent_given_a_function_without_a_signature_names_the_list_entry():
    with pytest.raises(TypeError, match=r"Agent\('a'\): tools\[0\]: tool: 'int' has no signature"):
        Agent("a", tools=[int])


def test_a_description_given_is_the_tools_description():
    assert tool(description="Find a city.")(lookup).description == "Find a city."
    assert tool(lookup).description == "Look a city up."
