"""JSON for the client's hot path without `import json`.

The stdlib `json` package pulls in `re`, `enum` and friends: ~18 ms per process on
this machine, more than the rest of a `gnoctl search`. The C accelerator `_json`
that `json` itself uses does the real work (scanning, string escaping) and imports
nothing, so this module wraps it. Output matches `json.dumps(obj, ensure_ascii=False, indent=N)`,
or with `separators=(",", ":")` when compact, byte for byte (tests/test_fastjson.py
checks it against the stdlib).
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing itself imports re: too slow for the hot path (mypy reads it as True)
if TYPE_CHECKING:
    from typing import Any

_escape = _json.encode_basestring


class _Options:
    """The attributes `_json.make_scanner` reads from its context (json.JSONDecoder's)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


_scan = _json.make_scanner(_Options())  # type: ignore[arg-type]  # duck-typed: it reads these attributes
_SPACE = " \t\n\r"


def loads(data: str | bytes | bytearray) -> Any:
    """Decode one JSON document (str or UTF-8 bytes); ValueError if it is not one."""
    if isinstance(data, (bytes, bytearray)):
        data = data.decode("utf-8")
    start = len(data) - len(data.lstrip(_SPACE))
    try:
        obj, end = _scan(data, start)
    except StopIteration:
        raise ValueError(f"invalid JSON at character {start}") from None
    if data[end:].strip(_SPACE):
        raise ValueError(f"extra data after JSON at character {end}")
    return obj


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    return float.__repr__(x)


def _encode(obj: Any, indent: int | None, level: int, out: list[str]) -> None:
    if isinstance(obj, str):
        out.append(_escape(obj))
    elif obj is None:
        out.append("null")
    elif obj is True:
        out.append("true")
    elif obj is False:
        out.append("false")
    elif isinstance(obj, int):
        out.append(int.__repr__(obj))
    elif isinstance(obj, float):
        out.append(_float(obj))
    elif isinstance(obj, dict):
        if not obj:
            out.append("{}")
            return
        inner, close = _breaks(indent, level)
        out.append("{")
        for i, (k, v) in enumerate(obj.items()):
            out.append(inner if i == 0 else "," + inner)
            out.append(_escape(k if isinstance(k, str) else _key(k)))
            out.append(": " if indent is not None else ":")
            _encode(v, indent, level + 1, out)
        out.append(close + "}")
    elif isinstance(obj, (list, tuple)):
        if not obj:
            out.append("[]")
            return
        inner, close = _breaks(indent, level)
        out.append("[")
        for i, v in enumerate(obj):
            out.append(inner if i == 0 else "," + inner)
            _encode(v, indent, level + 1, out)
        out.append(close + "]")
    else:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")


def _key(k: object) -> str:
    if k is None or isinstance(k, bool):
        return {None: "null", True: "true", False: "false"}[k]
    if isinstance(k, (int, float)):
        return _float(k) if isinstance(k, float) else int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _breaks(indent: int | None, level: int) -> tuple[str, str]:
    if indent is None:
        return "", ""
    return "\n" + " " * (indent * (level + 1)), "\n" + " " * (indent * level)


def dumps(obj: Any, indent: int | None = None) -> str:
    """Encode like json.dumps(obj, ensure_ascii=False, indent=indent); compact when indent is None."""
    out: list[str] = []
    _encode(obj, indent, 0, out)
    return "".join(out)
