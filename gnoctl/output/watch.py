"""`gnoctl watch`: one line per change of the index, as it is committed."""

from __future__ import annotations

import time

from gnoctl import fastjson


def watch_line(method: str, params: dict, fmt: str) -> str | None:
    """A `change` or `lagged` notification as a line: for a person, the time, what
    happened and to which document; otherwise the notification as one JSON object."""
    if method not in ("change", "lagged"):
        return None
    if fmt != "human":
        return fastjson.dumps({"event": method, **params})
    now = time.strftime("%H:%M:%S")
    if method == "lagged":
        return f"{now}  lagged   {params['dropped']} changes missed: refresh what you show"
    name = params["collection"]
    what = f"{name}/{params['path']}" if params.get("path") else f"{name} (the collection)"
    return f"{now}  {params['kind']:<8} {what}"
