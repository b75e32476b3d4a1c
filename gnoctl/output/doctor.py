"""`doctor`: each component of a `status` result judged ok, warn or fail, with its fix."""

from __future__ import annotations

import os

from gnoctl.output.common import size
from gnoctl.output.status import threads_line


def checks(st: dict | None, daemon_error: str = "") -> list[dict]:
    """The checks, in order: daemon, config, index storage, collections, ocr, gpu, threads,
    vectors, models. Without a status (`daemon_error` says why) only the daemon is judged."""
    out: list[dict] = []

    def check(name: str, status: str, detail: str, fix: str = "") -> None:
        out.append({"component": name, "status": status, "detail": detail, "fix": fix})

    if st is None:
        check("daemon", "fail", daemon_error, "gnoctl daemon start; gnoctl daemon logs")
        return out
    check("daemon", "ok", f"gnod {st['version']} pid {st['pid']}, protocol {st['protocol']}")
    if st.get("config_error"):
        check("config", "fail", st["config_error"], f"edit {st['config_path']}")
    else:
        check("config", "ok", st["config_path"])
    if st.get("storage_error"):
        check("index storage", "fail", st["storage_error"], f"free space on the disk holding {st['db_path']}")
    else:
        check("index storage", "ok", f"{st['db_path']} ({size(st['db_bytes'])})")
    for c in st["collections"]:
        ok = os.path.isdir(c["path"])
        docs, failed = c["documents"], c["errors"]
        check(
            f"collection {c['name']}",
            "ok" if ok else "fail",
            f"{docs:,} document{'s' * (docs != 1)}, {failed:,} file{'s' * (failed != 1)} that could not be read"
            f"{' (gnoctl status --errors lists them)' if failed else ''}, {c['path']}",
            "" if ok else f"the folder is missing: gnoctl collection remove {c['name']} or restore it",
        )
    ocr = st.get("ocr")
    if ocr and ocr["available"]:
        check("ocr", "ok", f"{ocr['version']}, languages: {', '.join(ocr['languages'])}")
    elif ocr:
        check("ocr", "warn", f"{ocr['reason']}: images and scanned PDFs are listed as NEEDS_OCR", ocr.get("fix") or "")
    gpu = st.get("gpu") or {}
    if gpu.get("gpu_layers") and not gpu.get("offload_supported"):
        check(
            "gpu",
            "warn",
            f"gpu_layers = {gpu['gpu_layers']}, but this llama.cpp build has no GPU support: models run on the CPU",
            'CMAKE_ARGS="-DGGML_CUDA=on" (or -DGGML_METAL=on) '
            "pip install --force-reinstall --no-cache-dir llama-cpp-python",
        )
    elif gpu:
        layers = "all" if gpu.get("gpu_layers") == -1 else gpu.get("gpu_layers")
        where = f"GPU {gpu['main_gpu']} ({layers} layers)" if layers else "the CPU"
        check(
            "gpu",
            "ok",
            f"local models run on {where}; this llama.cpp build "
            f"{'can' if gpu.get('offload_supported') else 'cannot'} offload to a GPU",
        )
    if st.get("threads"):
        check("threads", "ok", "llama.cpp threads per local model: " + threads_line(st["threads"]))
    vec = st.get("vectors") or {}
    if vec.get("available"):
        check("vectors", "ok", f"{vec['embedded']}/{vec['chunks']} chunks embedded with {vec['serving']}")
    else:  # the reason says its own fix, if any (a first embedding under way needs none)
        detail, said, fix = (vec.get("reason") or "no vectors yet (fix: gnoctl embed)").rpartition(" (fix: ")
        if not said:
            detail, fix = fix, ""
        check("vectors", "warn", detail, fix.removesuffix(")"))
    for m in st.get("models", []):
        status = {"ready": "ok", "unloaded": "ok", "loading": "ok", "missing": "warn"}.get(m["state"], "fail")
        latency = f", {m['latency_ms']:g} ms" if m.get("latency_ms") is not None else ""
        check(
            f"model {m['role']}",
            status,
            f"{m['uri']} ({m['state']}{latency})" + (f": {m['error']}" if m.get("error") else ""),
            m.get("fix") or "",
        )
    return out


def lines(res: dict) -> list[str]:
    """`[ok  ] component: detail`, and the fix under anything not ok."""
    marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
    out = []
    for c in res["checks"]:
        out.append(f"[{marks[c['status']]}] {c['component']}: {c['detail']}")
        if c["fix"] and c["status"] != "ok":
            out.append(f"       fix: {c['fix']}")
    return out
