"""files.json_depth blanks JSON strings with a regex before counting brackets: the unrolled
form it uses blanks exactly what the byte-by-byte form does, and the depth is the parsed
value's, on generated texts (quotes, escapes and brackets inside strings included)."""
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pslab.files import _STRING, json_depth

BYTE_BY_BYTE = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)  # the plain form of a JSON string


@settings(max_examples=500, derandomize=True)
@given(st.binary(max_size=40) | st.lists(st.sampled_from(list(b'"\\ab[]{}\n')),
                                         max_size=40).map(bytes))
def test_strings_are_blanked_as_the_byte_by_byte_form_blanks_them(text):
    assert _STRING.sub(b'""', text) == BYTE_BY_BYTE.sub(b'""', text)


def depth(value) -> int:
    if isinstance(value, (list, dict)):
        inner = value.values() if isinstance(value, dict) else value
        return 1 + max(map(depth, inner), default=0)
    return 0


JSON = st.recursive(st.none() | st.integers() | st.text(alphabet='"\\[]{}ab\n'),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(alphabet='"\\[]{}ab', max_size=4), inner,
                                      max_size=3), max_leaves=20)


@settings(max_examples=300, derandomize=True)
@given(JSON)
def test_the_depth_is_the_parsed_values(value):
    assert json_depth(json.dumps(value).encode()) == depth(value)
