"""A reproduction that fails does not sink the others: ``run_all`` reports it with its
error, runs the rest, keeps the failed one's previous section in the results file and
names it in the list it returns (``sparsekm reproduce`` then exits 1 naming it); without
``keep_going`` the error is raised; and a run that is interrupted keeps every section it
finished. Stand-in reproductions, no data."""

import pytest

import sparsekm.reproduce as rep
from sparsekm.cli import main
from sparsekm.reproduce import Context, Result, Section, _Entry
from sparsekm.reproduce._report import parse_results, run_all

SECTION = Section(title="Stand-ins", intro="Two tables.", order=1)


@pytest.fixture
def registry():
    state = {"fail": False, "interrupt": False, "value": 1}

    def good(ctx):
        return Result("good", "Good table", f"| v |\n|---|\n| {state['value']} |")

    def flaky(ctx):
        if state["interrupt"]:
            raise KeyboardInterrupt
        if state["fail"]:
            raise RuntimeError("the solver diverged")
        return Result("flaky", "Flaky table", f"| w |\n|---|\n| {10 * state['value']} |")

    entries = {"flaky": _Entry("flaky", "a flaky table", flaky, section=SECTION),
               "good": _Entry("good", "a good table", good, section=SECTION)}
    return entries, state


def _run(registry, tmp_path, **kw):
    lines = []
    out = run_all(registry, list(registry), Context(out_dir=tmp_path, progress=False),
                  results_path=tmp_path / "results.md", echo=lines.append, **kw)
    return out, lines


def test_a_failure_is_reported_and_the_others_still_run(registry, tmp_path):
    entries, state = registry
    state["fail"] = True
    (results, _, failed), lines = _run(entries, tmp_path)
    assert failed == ["flaky"] and [r.name for r in results] == ["good"]
    assert any(line.startswith("sparsekm reproduce: flaky failed after") and
               "RuntimeError: the solver diverged" in line for line in lines)
    assert set(parse_results((tmp_path / "results.md").read_text())) == {"good"}


def test_a_failed_reproduction_keeps_its_previous_section(registry, tmp_path):
    entries, state = registry
    _run(entries, tmp_path)  # both succeed: value 1
    state.update(fail=True, value=2)
    _run(entries, tmp_path)
    text = (tmp_path / "results.md").read_text()
    records = parse_results(text)
    assert "| 10 |" in records["flaky"].block  # the previous run's number, kept
    assert "| 2 |" in records["good"].block   # re-run


def test_without_keep_going_the_error_is_raised(registry, tmp_path):
    entries, state = registry
    state["fail"] = True
    with pytest.raises(RuntimeError, match="the solver diverged"):
        _run(entries, tmp_path, keep_going=False)


def test_an_interrupted_run_keeps_the_sections_it_finished(registry, tmp_path):
    entries, state = registry
    state["interrupt"] = True
    ordered = {"good": entries["good"], "flaky": entries["flaky"]}  # good first
    with pytest.raises(KeyboardInterrupt):
        _run(ordered, tmp_path)
    assert set(parse_results((tmp_path / "results.md").read_text())) == {"good"}


def test_the_command_exits_1_naming_the_failed_reproductions(registry, tmp_path,
                                                              monkeypatch, capsys):
    entries, state = registry
    state["fail"] = True
    monkeypatch.setattr(rep, "discover", lambda: entries)
    assert main(["reproduce", "all", "--quiet", "--out", str(tmp_path / "out")]) == 1
    assert "sparsekm: error: 1 reproduction(s) failed: flaky" in capsys.readouterr().err
