#!/usr/bin/env python3
"""Run the default test suite under several OpenBLAS kernels, numpy SIMD dispatches and thread counts.

OpenBLAS chooses its compute kernels by CPU, so a floating-point tie can break one way
on one machine and the other way on the next.  ``OPENBLAS_CORETYPE`` forces a kernel
(Prescott is the generic x86-64 one), which lets one machine play several CPUs.  numpy
dispatches its own loops by CPU too: ``--numpy no-avx512`` sets
``NPY_DISABLE_CPU_FEATURES`` to the AVX-512 targets this numpy dispatches (``X86_V4``,
``AVX512_*``; what an AVX2-only CPU runs), ``native`` leaves numpy as it is. For
every (kernel, numpy dispatch, ``OMP_NUM_THREADS``) triple this script runs ``python -m pytest`` (the
README's command, default markers and doctests) in a fresh process, reads the counts
from a JUnit XML file, asks threadpoolctl which kernel the BLAS actually reported in
that environment, and writes a report to stdout and to
``benchmarks/results/test_kernels.json``.  The exit status is non-zero if any run failed.

Examples
--------
Full matrix, serial::

    python tools/test_kernels.py

Faster, two pytest-xdist workers, two thread counts::

    python tools/test_kernels.py -n 2 --omp 1 2

One kernel, a subset of the tests::

    python tools/test_kernels.py --kernels Prescott -- tests/test_slmc_shared.py

numpy's AVX-512 loops off, the native BLAS kernel, under ``PYTHONWARNINGS=ignore``::

    python tools/test_kernels.py --kernels native --numpy no-avx512 --pythonwarnings ignore
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("Prescott", "Nehalem", "Sandybridge", "Haswell", "SkylakeX")
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "test_kernels.json"

_PROBE = (
    "import json, numpy, scipy.linalg; from threadpoolctl import threadpool_info; "
    "print(json.dumps([{k: i.get(k) for k in ('user_api', 'internal_api', 'prefix', "
    "'version', 'architecture', 'num_threads')} for i in threadpool_info()]))"
)


NUMPY_MODES = ("native", "no-avx512")

_NUMPY_PROBE = (
    "import json; from numpy._core import _multiarray_umath as m; "
    "print(json.dumps({'dispatch': list(m.__cpu_dispatch__), "
    "'enabled': sorted(k for k, v in m.__cpu_features__.items() if v)}))"
)


def avx512_targets(python=sys.executable):
    """The AVX-512 targets the numpy of ``python`` dispatches to (``X86_V4``,
    ``AVX512F``, ``AVX512_SKX``, ...: the names differ between numpy versions)."""
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    info = _numpy_probe(python, env)
    return [d for d in info.get("dispatch", []) if d.startswith("AVX512") or d == "X86_V4"]


def _run_probe(python, env, code, on_error):
    """The JSON a probe script prints in ``env``; ``on_error(message)`` when it prints none."""
    out = subprocess.run([python, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, check=False)
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return on_error((out.stderr or out.stdout)[-500:])


def _numpy_probe(python, env):
    return _run_probe(python, env, _NUMPY_PROBE, lambda msg: {"error": msg})


def _env(kernel, omp, numpy_mode="native", python=sys.executable, pythonwarnings=None):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if kernel != "native":
        env["OPENBLAS_CORETYPE"] = kernel
    if omp is not None:
        env["OMP_NUM_THREADS"] = str(omp)
    if numpy_mode == "no-avx512":
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(avx512_targets(python))
    elif numpy_mode != "native":
        raise ValueError(f"numpy mode {numpy_mode!r}: choose from {NUMPY_MODES}")
    if pythonwarnings is not None:
        env["PYTHONWARNINGS"] = pythonwarnings
    return env


def _probe(python, env):
    """The BLAS libraries threadpoolctl reports in ``env`` (kernel actually in use)."""
    return _run_probe(python, env, _PROBE, lambda msg: [{"error": msg}])


def _counts(xml_path):
    """Passed/failed/error/skipped counts and the failures (id, message) from JUnit XML."""
    root = ET.parse(xml_path).getroot()
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    failing = []
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        bad = next(((tag, el) for tag in ("failure", "error")
                    if (el := case.find(tag)) is not None), None)
        if bad is not None:
            tag, el = bad
            counts["failed" if tag == "failure" else "errors"] += 1
            text = (el.get("message") or "") + "\n" + (el.text or "")
            failing.append({"test": name, "kind": tag, "message": text[-3000:]})
        elif case.find("skipped") is not None:
            counts["skipped"] += 1
        else:
            counts["passed"] += 1
    return counts, failing


def run_one(python, kernel, omp, workers, pytest_args, numpy_mode="native",
            pythonwarnings=None):
    """Run the suite once; return its record (counts, failures, kernel reported, seconds)."""
    env = _env(kernel, omp, numpy_mode, python, pythonwarnings)
    with tempfile.TemporaryDirectory() as tmp:
        xml = Path(tmp) / "junit.xml"
        cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=short",
               f"--junitxml={xml}"]
        if workers:
            cmd += ["-n", str(workers)]
        cmd += list(pytest_args)
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True,
                              check=False)
        seconds = time.perf_counter() - t0
        if xml.exists():
            counts, failing = _counts(xml)
        else:
            counts, failing = {"passed": 0, "failed": 0, "errors": 1, "skipped": 0}, []
    summary = next((ln for ln in reversed(proc.stdout.splitlines()) if ln.strip()), "")
    return {
        "kernel_requested": kernel,
        "omp_num_threads": omp,
        "numpy_dispatch": numpy_mode,
        "npy_disable_cpu_features": env.get("NPY_DISABLE_CPU_FEATURES"),
        "numpy_cpu_features_enabled": _numpy_probe(python, env).get("enabled"),
        "pythonwarnings": env.get("PYTHONWARNINGS"),
        "blas_reported": _probe(python, env),
        "pytest_workers": workers or 0,
        "returncode": proc.returncode,
        **counts,
        "failing": failing,
        "summary": summary,
        "seconds_wall": round(seconds, 1),
        "ok": proc.returncode == 0,
        "output_tail": "" if proc.returncode == 0 else proc.stdout[-2000:] + proc.stderr[-2000:],
    }


def _commit():
    """The checked-out commit (with ``+dirty`` for uncommitted changes), or ``None``."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=ROOT, text=True, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if dirty.strip() else "")


def _stamp():
    """sparsekm._provenance.stamp() of this checkout (the tests' parent process)."""
    sys.path.insert(0, str(ROOT / "src"))
    try:
        from sparsekm._provenance import stamp
    finally:
        sys.path.pop(0)
    return stamp(ROOT)


def _machine():
    cpu = ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpu": cpu, "cpu_count": os.cpu_count(), "loadavg_at_start": load}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", nargs="+", default=list(KERNELS),
                    help="OPENBLAS_CORETYPE values ('native': leave it unset); "
                         "default: %(default)s")
    ap.add_argument("--omp", nargs="+", default=["1"],
                    help="OMP_NUM_THREADS values ('inherit': leave as is); default: 1")
    ap.add_argument("--numpy", nargs="+", default=list(NUMPY_MODES), choices=NUMPY_MODES,
                    help="numpy's SIMD dispatch: 'native', 'no-avx512' (its AVX-512 loops off "
                         "with NPY_DISABLE_CPU_FEATURES, as on an AVX2-only CPU); default: both")
    ap.add_argument("--pythonwarnings", default=None, metavar="VALUE",
                    help="PYTHONWARNINGS for every run (e.g. 'ignore'); default: as inherited")
    ap.add_argument("-n", "--workers", type=int, default=0,
                    help="pytest-xdist workers per run (0: serial, the default)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT,
                    help="JSON report (default: benchmarks/results/test_kernels.json)")
    ap.add_argument("--python", default=sys.executable, help="interpreter to test with")
    ap.add_argument("--append", action="store_true",
                    help="keep the runs already in --out (other kernels, thread counts or "
                         "worker counts measured earlier) and add these")
    ap.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)

    omps = [None if o == "inherit" else int(o) for o in args.omp]
    report = {
        "script": "tools/test_kernels.py",
        "started_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": _machine(),
        "native_blas": _probe(args.python, _env("native", None)),
        "numpy_avx512_targets": avx512_targets(args.python),
        "pytest_args": args.pytest_args,
        "runs": [],
    }
    earlier = []
    if args.append and args.out.exists():
        earlier = json.loads(args.out.read_text()).get("runs", [])
    ok = True
    combos = [(k, n, o) for k in args.kernels for n in args.numpy for o in omps]
    for kernel, numpy_mode, omp in combos:
        rec = run_one(args.python, kernel, omp, args.workers, args.pytest_args, numpy_mode,
                      args.pythonwarnings)
        report["runs"].append(rec)
        ok &= rec["ok"]
        rec["commit"] = _commit()
        arch = sorted({i.get("architecture") for i in rec["blas_reported"]
                       if i.get("internal_api") == "openblas"} - {None})
        print(f"{kernel:<12} numpy={numpy_mode:<10} OMP={omp!s:<7} "
              f"reported={','.join(arch) or '?':<20} "
              f"passed={rec['passed']:<5} failed={rec['failed']:<3} "
              f"errors={rec['errors']:<3} skipped={rec['skipped']:<3} "
              f"{rec['seconds_wall']:>7.1f} s  {'ok' if rec['ok'] else 'FAILED'}",
              flush=True)
        for bad in rec["failing"]:
            print(f"    {bad['kind'].upper()} {bad['test']}", flush=True)
        report["finished_utc"] = _dt.datetime.now(_dt.timezone.utc).isoformat(
            timespec="seconds")
        report["all_ok"] = ok
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".json.tmp")
        full = {**report, "runs": earlier + report["runs"],
                "all_ok": all(r["ok"] for r in earlier + report["runs"]),
                "provenance": _stamp()}
        tmp.write_text(json.dumps(full, indent=1) + "\n")
        tmp.replace(args.out)
    print(f"{'all runs passed' if ok else 'SOME RUNS FAILED'}; report: {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
