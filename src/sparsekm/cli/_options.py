"""Sub-command registration and the options several commands share."""

from __future__ import annotations


def add_command(parser, name, help_text):
    """Add a sub-command that accepts the global options too; returns its parser."""
    return parser._sparsekm_subparsers.add_parser(
        name, help=help_text, description=help_text, parents=[parser._sparsekm_common])


def add_force_option(p, what, read_only=False):
    """``--force``: the one rule of every command that writes a file."""
    p.add_argument("--force", action="store_true",
                   help=f"replace {what} if it exists"
                        + (" (even read-only; its mode is kept)" if read_only else "")
                        + ". Without it an existing file is refused; the command's own input "
                        "files are never replaced")


def add_key_file_option(p):
    p.add_argument("--key-file", default=None, metavar="FILE",
                   help="secret key (file contents): models loaded must carry a matching "
                        "HMAC-SHA256 tag, and models saved are signed with it")
    p.add_argument("--require-key", action="store_true",
                   help="refuse any model not verified with --key-file (without it, a signed "
                        "model loads with a warning that its tag was not checked)")
