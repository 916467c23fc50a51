"""The ``sparsekm`` command: a package of commands over shared I/O.

One module per command in :mod:`sparsekm.cli._commands` registers its sub-parser and
handler (``add_parser``); :mod:`sparsekm.cli._io` reads and writes data rows, refuses the
inputs and outputs a command must not use and holds the model-loading policy.

Exit codes: 0 success, 2 usage error (argparse, or options that do not apply to
the model given), 1 runtime error (a one-line message; ``--debug`` shows the
traceback). Output to a closed pipe (``sparsekm predict ... | head -1``) ends
quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from ._commands import COMMANDS

# The public names of the former single-module ``sparsekm.cli`` (and the demo's timing
# helpers its tests read), importable from here as before.
from ._commands.data import cmd_data
from ._commands.demo import _DEMO_REPEATS, _cpu_timings, _rs_vector_classes, cmd_demo
from ._commands.denoise import cmd_denoise
from ._commands.export import cmd_export
from ._commands.info import cmd_info
from ._commands.predict import cmd_predict
from ._commands.reduce import (
    COMPRESS_ONLY_METHODS,
    DEFAULT_REDUCE_METHOD,
    MIN_AGREEMENT,
    REDUCE_METHODS,
    add_compress_options,
    cmd_reduce,
    cmd_reduce_compress,
)
from ._commands.reproduce import checkout_docs, cmd_reproduce
from ._io import (
    OUTPUT_FORMATS,
    CLIError,
    check_input_file,
    check_output_path,
    load_model,
    load_object,
    read_key_file,
    read_matrix,
    reducible,
    write_matrix,
)
from ._options import add_command, add_force_option, add_key_file_option

__all__ = ["main", "build_parser"]


def build_parser():
    def common(suppress):
        # The global options are accepted before and after the command name.
        c = argparse.ArgumentParser(add_help=False)
        dflt = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
        c.add_argument("--quiet", action="store_true", default=dflt(False),
                       help="no progress bars")
        c.add_argument("--seed", type=int, default=dflt(0), help="random seed (default 0)")
        c.add_argument("--debug", action="store_true", default=dflt(False),
                       help="show tracebacks on errors")
        c.add_argument("--data", default=dflt(None),
                       help="data folder (default: $SPARSEKM_DATA, ../shared/data, or the "
                            "folder 'sparsekm data fetch' downloads into)")
        return c

    parser = argparse.ArgumentParser(
        prog="sparsekm", parents=[common(False)],
        description="Sparse and approximate kernel machines: make kernel expansions small and fast.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser._sparsekm_subparsers = sub
    parser._sparsekm_common = common(True)
    for command in COMMANDS:  # in the order of the help text
        command.add_parser(parser)
    return parser


def _one_line(text):
    """The first non-empty line of ``text``, marked when lines were dropped."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if not lines:
        return ""
    return lines[0] + (" (--debug shows the rest)" if len(lines) > 1 else "")


def _warning_printer(quiet):
    """A ``warnings.showwarning`` that prints ``sparsekm: warning: <one line>`` on stderr.

    No source line, no file name: a user of the command cannot act on either. With
    ``--quiet``, ``ConvergenceWarning`` (a fit that stopped at its iteration budget)
    is not shown; every other warning still is.
    """
    from sklearn.exceptions import ConvergenceWarning

    def show(message, category, filename, lineno, file=None, line=None):
        if quiet and issubclass(category, ConvergenceWarning):
            return
        try:
            print(f"sparsekm: warning: {_one_line(message)}", file=sys.stderr)
        except (OSError, ValueError):  # stderr closed: nothing to tell
            pass

    return show


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from ..utils import progress

    quiet_before = progress._QUIET
    if args.quiet:
        progress.set_quiet(True)
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _warning_printer(args.quiet)
            return _run(args)
    finally:  # main() called in a process that goes on (tests, notebooks): no lasting switch
        progress.set_quiet(quiet_before)


def _run(args):
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader closed the pipe (e.g. `| head -1`): it has what it wanted, so this is
        # a success. Python's documented recipe: point stdout at devnull so that the
        # interpreter's final flush cannot fail.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("sparsekm: interrupted", file=sys.stderr)
        return 1
    except SystemExit:
        raise
    except CLIError as exc:  # already says what to do
        if args.debug:
            raise
        print(f"sparsekm: error: {_one_line(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:  # one-line message unless --debug
        if args.debug:
            raise
        print(f"sparsekm: error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        return 1
