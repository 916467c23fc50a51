"""``sparsekm info``: versions, BLAS and the data folder."""

from __future__ import annotations

import platform

from .._options import add_command


def cmd_info(args):
    import numpy as np
    import scipy
    import sklearn
    from threadpoolctl import threadpool_info

    from ... import __version__
    from ...datasets import data_available, find_data_dir

    print(f"sparsekm {__version__}")
    print(f"python {platform.python_version()} ({platform.machine()}), numpy {np.__version__}, "
          f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}")
    for pool in threadpool_info():
        if pool.get("user_api") == "blas":
            print(f"BLAS: {pool.get('internal_api')} {pool.get('version')} "
                  f"({pool.get('num_threads')} threads) {pool.get('filepath')}")
    for opt in ("torch", "dask", "distributed"):
        try:
            mod = __import__(opt)
            print(f"{opt} {getattr(mod, '__version__', '?')}")
        except ImportError:
            print(f"{opt}: not installed (optional)")
    root = find_data_dir(args.data)
    if root is not None and not root.is_dir():  # --data names a folder that is not there
        print(f"data folder: {root} does not exist (the embedded digits still work)")
    elif root is None:
        print("data folder: not found (download it with 'sparsekm data fetch', or set "
              "SPARSEKM_DATA or pass --data); the embedded digits still work")
    else:
        status = ", ".join(f"{n} {'yes' if data_available(n, root) else 'no'}"
                           for n in ("usps", "ida", "ripley"))
        print(f"data folder: {root} ({status})")
    return 0


def add_parser(parser):
    """Register ``sparsekm info`` (its options and handler) on ``parser``."""
    p = add_command(parser, "info", "versions, BLAS and whether the data folder is found")
    p.set_defaults(func=cmd_info)
