"""The ``sparsekm`` commands, one module each: ``add_parser(parser)`` registers the
command's sub-parser, whose ``func`` default is the handler ``cmd_<name>(args)``."""

from . import data, demo, denoise, export, info, predict, reduce, reproduce

#: the commands in the order ``sparsekm --help`` lists them
COMMANDS = (demo, data, info, reduce, predict, export, reproduce, denoise)
