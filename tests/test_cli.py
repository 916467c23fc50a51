import re

import pytest

from sparsekm.cli import main


def test_help_lists_commands(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for cmd in ("demo", "info", "reproduce"):
        assert cmd in out


def test_no_command_is_a_usage_error(capsys):
    assert main([]) == 2


def test_unknown_option_exits_2():
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--no-such-option"])
    assert exc.value.code == 2


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("sparsekm ")
    assert "data folder" in out


def test_demo_prints_table_and_speedup(capsys):
    assert main(["demo", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "sklearn OneVsRestClassifier(SVC)" in out
    row = [line for line in out.splitlines() if line.startswith("sparsekm KernelExpansion")][0]
    error = float(re.search(r"([\d.]+)%", row).group(1))
    assert error < 3.0  # RBF SVM on the digits: about 1% test error


def test_reproduce_unknown_name_is_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "no-such-table"])
    assert exc.value.code == 2
    assert "unknown reproduction" in capsys.readouterr().err


def test_runtime_error_is_one_line_exit_1(capsys, monkeypatch):
    from sparsekm import cli

    def boom(args):
        raise ValueError("something broke")

    monkeypatch.setattr(cli, "cmd_info", boom)
    assert main(["info"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "sparsekm: error: ValueError: something broke"
    with pytest.raises(ValueError, match="something broke"):
        main(["info", "--debug"])
