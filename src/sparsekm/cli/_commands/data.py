"""``sparsekm data fetch``: download and verify the papers' data sets."""

from __future__ import annotations

import os

from .._io import CLIError
from .._options import add_command


def cmd_data(args):
    """``sparsekm data fetch [usps|ida|ripley|all]``: download, verify, cache."""

    from ... import datasets

    fetchers = {"usps": datasets.fetch_usps, "ida": datasets.fetch_ida,
                "ripley": datasets.fetch_ripley}
    which = list(fetchers) if args.which == "all" else [args.which]
    for name in which:
        kw = {"base_url": args.base_url, "progressbar": not args.quiet}
        try:
            root = (fetchers[name](None, args.data, **kw) if name == "ida"
                    else fetchers[name](args.data, **kw))
        except OSError as exc:  # every source failed: offline, proxy, server down
            if args.debug:
                raise
            raise CLIError(
                f"could not download {name} from any source (offline, or behind a proxy?). Run "
                "'sparsekm data fetch' again with a connection, or copy a data folder that "
                "has it from another machine and point sparsekm at it with --data DIR or "
                "SPARSEKM_DATA=DIR (--debug lists each source's error)") from exc
        except ValueError as exc:
            if args.debug or "SHA-256" not in str(exc):
                raise
            raise CLIError(
                f"refusing {name}: the downloaded files do not have the expected SHA-256, so "
                "nothing was kept; try again later or another mirror (--base-url), or use a "
                "verified data folder with --data DIR or SPARSEKM_DATA=DIR (--debug lists "
                "each source)") from exc
        print(f"{name}: verified (SHA-256) in {root}")
    if args.data is None and not os.environ.get("SPARSEKM_DATA"):
        print("the loaders find this folder on their own (sparsekm.datasets, "
              "'sparsekm reproduce')")
    else:
        print(f"point the loaders at it with --data {root} or SPARSEKM_DATA={root}")
    return 0


def add_parser(parser):
    """Register ``sparsekm data`` (its options and handler) on ``parser``."""
    p = add_command(parser, "data", "download the papers' data sets (USPS, IDA, Ripley) from "
                    "their public sources, verify their SHA-256 and cache them (--data DIR, "
                    "else $SPARSEKM_DATA, else the user cache folder); needs sparsekm[data]")
    p.add_argument("action", choices=["fetch"], help="fetch: download and verify")
    p.add_argument("which", nargs="?", default="all", choices=["usps", "ida", "ripley", "all"],
                   help="data set(s) to fetch (default all)")
    p.add_argument("--base-url", default=None,
                   help="a mirror serving the data-folder layout (default $SPARSEKM_DATA_URL, "
                        "else the public sources)")
    p.set_defaults(func=cmd_data)
