"""``sparsekm.cli.main``'s plumbing: global options before or after the command, exit
codes and the one-line messages of each kind of failure, and ``info``'s report."""

import numpy as np
import pytest

import sparsekm
from sparsekm.cli import CLIError, build_parser, main


@pytest.mark.parametrize("argv", [["--seed", "5", "--quiet", "info"],
                                  ["info", "--seed", "5", "--quiet"]])
def test_global_options_go_before_or_after_the_command(argv):
    args = build_parser().parse_args(argv)
    assert (args.command, args.seed, args.quiet, args.debug) == ("info", 5, True, False)


def test_global_options_have_their_defaults_after_a_command():
    args = build_parser().parse_args(["info"])
    assert (args.seed, args.quiet, args.debug, args.data) == (0, False, False, None)


def test_every_command_has_its_own_help(capsys):
    parser = build_parser()
    names = list(parser._sparsekm_subparsers.choices)
    assert {"demo", "info", "reduce", "predict", "export", "reproduce", "denoise",
            "data"} <= set(names)
    for name in names:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        assert capsys.readouterr().out.startswith(f"usage: sparsekm {name}")


def _patched_info(monkeypatch, exc):
    def fail(args):
        raise exc

    monkeypatch.setattr("sparsekm.cli._commands.info.cmd_info", fail)


def test_a_cli_error_is_printed_without_its_type(monkeypatch, capsys):
    _patched_info(monkeypatch, CLIError("the file is wrong; do this instead"))
    assert main(["info"]) == 1
    assert capsys.readouterr().err == "sparsekm: error: the file is wrong; do this instead\n"


def test_debug_shows_a_cli_error_as_raised(monkeypatch):
    _patched_info(monkeypatch, CLIError("the file is wrong"))
    with pytest.raises(CLIError, match="the file is wrong"):
        main(["--debug", "info"])


def test_an_interrupt_is_one_line_and_exit_1(monkeypatch, capsys):
    _patched_info(monkeypatch, KeyboardInterrupt())
    assert main(["info"]) == 1
    assert capsys.readouterr().err == "sparsekm: interrupted\n"


def test_info_reports_a_data_folder_and_what_it_holds(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SPARSEKM_DATA", raising=False)
    assert main(["--data", str(tmp_path), "info"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"sparsekm {sparsekm.__version__}"
    assert f"numpy {np.__version__}" in out[1]
    data = [line for line in out if line.startswith("data folder:")]
    assert data == [f"data folder: {tmp_path} (usps no, ida no, ripley no)"]



def test_python_dash_m_runs_the_same_main(monkeypatch, capsys):
    import runpy

    monkeypatch.setattr("sys.argv", ["sparsekm", "info"])
    with pytest.raises(SystemExit) as exc:
        runpy.run_module("sparsekm.cli", run_name="__main__")
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"sparsekm {sparsekm.__version__}")


def test_info_says_a_missing_data_folder_is_missing(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    assert main(["info", "--data", str(missing)]) == 0
    line = [x for x in capsys.readouterr().out.splitlines() if x.startswith("data folder")]
    assert line == [f"data folder: {missing} does not exist (the embedded digits still work)"]
