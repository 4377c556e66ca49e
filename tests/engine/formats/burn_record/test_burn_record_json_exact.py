"""JSON records (PrettyJson, JsonGz; engine/formats/burn_record/__init__.py): the size limit at the exact byte and
every refusal in its own words.

Promises (README "Limits": JSON records up to 256 MiB; bad input is one line naming the file and what is wrong;
the audit of issue 25):
- JSON records up to the limit, refused past it with what to do -> here::test_the_size_limit_is_exact
- bad input is one line naming the file -> here::test_what_is_no_json_record_is_refused_in_words
"""

from __future__ import annotations

import json

import pytest

from engine import open_store
from engine.formats import burn_record
from tests.refusals import refusal

from burn_record_writers import Settings

META = json.dumps(Settings(recorder="PrettyJson").metadata())


def record(tmp_path, text: str | bytes):
    path = tmp_path / "r.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_the_size_limit_is_exact(tmp_path, monkeypatch):
    path = record(tmp_path, '{"metadata": %s, "item": {"n": 3}}' % META)
    size = path.stat().st_size
    monkeypatch.setattr(burn_record, "MAX_JSON_BYTES", size)
    with open_store(path) as store:
        assert store.values == {"n": 3} and store.kind == "JSON"
    monkeypatch.setattr(burn_record, "MAX_JSON_BYTES", size - 1)
    assert refusal(path) == (f"r.json: JSON record of {size} bytes is over the limit of {size - 1}; JSON spells each "
                             "byte as a number (convert it with Burn to NamedMpk first)")


@pytest.mark.parametrize(("text", "words"), [
    ('{"metadata": %s}' % META, "the record has metadata but no 'item'"),
    ('{"metadata": %s, "item": {"a": 1' % META, "file is truncated at byte 231"),
    ('{"metadata": %s, "item": {"a": 1}} x' % META, "not valid JSON (Extra data) at byte 234"),
    ('{"metadata": %s, "item": {"a": tru}}' % META, "not valid JSON (Expecting value) at byte 230"),
    ('{"metadata": %s, "item": ' % META + "[" * 100000 + "]" * 100000 + "}", "the JSON record is nested too deeply"),
    ('{"metadata": {"float": 1}, "item": {}}',
     "the record's metadata is not a map of float, int, format, version, settings (text each)"),
    (b'{"metadata": %s, "item": {"a": "\xff"}}' % META.encode(),
     "not valid JSON ('utf-8' codec can't decode byte 0xff in position 231: invalid start byte)"),
    ('{"metadata": %s, "item": {"a": 1]' % META, "file is truncated at byte 231"),  # the last byte: a cut-off end
    ('{"metadata": %s, "item": {"a": 1]x' % META, "not valid JSON (Expecting ',' delimiter) at byte 231"),
], ids=["no-item", "truncated", "extra-data", "bad-value", "deep", "metadata", "not-utf8", "last-byte", "before-last"])
def test_what_is_no_json_record_is_refused_in_words(tmp_path, text, words):
    assert refusal(record(tmp_path, text)) == f"r.json: {words}"


@pytest.mark.parametrize("raw", [[0, 256], [-1], [1.5], [True], {}, "ab"], ids=["256", "negative", "float", "bool",
                                                                                  "map", "text"])
def test_bytes_that_are_not_a_list_of_bytes_are_refused_in_words(tmp_path, raw):
    """JSON writes a tensor's bytes as a list of numbers 0 to 255; anything else is no byte string."""
    text = json.dumps({"metadata": json.loads(META), "item": {"w": {"bytes": raw, "shape": [0], "dtype": "U8"}}})
    assert refusal(record(tmp_path, text)) == "r.json: tensor 'w': 'bytes' is not a byte string"


def test_a_list_of_bytes_is_the_tensors_bytes(tmp_path):
    text = json.dumps({"metadata": json.loads(META), "item": {"w": {"bytes": [0, 255, 7], "shape": [3], "dtype": "U8"}}})
    with open_store(record(tmp_path, text)) as store:
        assert store.read("w").tolist() == [0, 255, 7]
