"""JSON Schema checks for the tests, by ``jsonschema`` (Draft 2020-12): an oracle written by
other people, so that our schemas are judged by the standard's reading, not by ours.

``valid(value, schema)`` checks ``value`` against a whole schema; ``valid(value, part,
root)`` against one part of ``root`` whose ``$ref``s point into ``root``'s ``$defs``. Every
schema is first checked against the 2020-12 metaschema (a typo in a keyword is an error, not
a schema that accepts everything).
"""

from __future__ import annotations

import json
from typing import Any

from jsonschema import Draft202012Validator


def validator(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Draft202012Validator:
    if root is not None and root is not schema and "$defs" in root:
        schema = {**schema, "$defs": root["$defs"]}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


_CACHE: dict[str, Draft202012Validator] = {}


def valid(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None) -> bool:
    key = json.dumps([schema, None if root is None or root is schema else root], sort_keys=True)
    checker = _CACHE.get(key)
    if checker is None:
        checker = _CACHE[key] = validator(schema, root)
    return bool(checker.is_valid(value))
