"""Every amount a user types is read in one place (issue 44, terazi.base.amounts): `inf`, `nan`, `-1`, `1e400`, `0x10`
and an empty text are refused for every option that takes one, in one `error:` line naming the option, before anything
runs. The options are found in the command line's own definitions (as tests/test_places.py finds its paths): an option
typed as a number, or read by `terazi.cli.options.reads`; a new numeric option that is not read so fails here."""

from __future__ import annotations

from typing import get_args

import pytest
from typer.main import get_command
from typer.testing import CliRunner

from terazi.base.amounts import number, parse_age, parse_size
from terazi.cli import app
from terazi.cli.score import parser as score_parser
from tests.test_places import commands

BAD = ["inf", "nan", "-1", "1e400", "0x10", ""]


def amount_options() -> list[tuple[str, object]]:
    """(command, click option) for every option that takes a number."""
    found = []
    for name, cmd in commands().items():
        for p in cmd.params:
            info = p.type_descriptor
            kinds = {info.annotation, *get_args(info.annotation)}
            if p.param_type_name == "option" and (
                kinds & {int, float} or getattr(info.parameter_info.callback, "amount", 0)
            ):
                found.append((name, p))
    return found


OPTIONS = amount_options()


@pytest.fixture(scope="module")
def runner():
    """A runner of the application built once (typer builds it again on every call: most of a refused call's time)."""
    import typer.testing

    built = get_command(app)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(typer.testing, "_get_command", lambda _: built)
        yield CliRunner()


def test_every_numeric_option_is_read_as_an_amount():
    assert len(OPTIONS) >= 25  # run, analyze, compare, corrupt, leakage, serve, cache prune
    unread = [
        f"{n} {p.opts[0]}" for n, p in OPTIONS if not getattr(p.type_descriptor.parameter_info.callback, "amount", 0)
    ]
    assert unread == []
    assert not [a.dest for a in score_parser()._actions if a.type in (int, float)]  # terazi score takes no number


@pytest.mark.parametrize("name, option", OPTIONS, ids=[f"{n} {p.opts[0]}" for n, p in OPTIONS])
def test_a_non_amount_is_refused_in_one_line_naming_the_option(runner, name, option):
    for bad in BAD:
        res = runner.invoke(app, [*name.split(), option.opts[0], bad])
        errors = [line for line in res.output.splitlines() if line.startswith("error:")]
        assert res.exit_code == 2 and len(errors) == 1 and "Traceback" not in res.output, (bad, res.output)
        assert errors[0].startswith(f"error: {option.opts[0]}: "), (bad, errors)
        assert repr(bad) in errors[0] or "must be ≥" in errors[0] or "must be >" in errors[0], (bad, errors)


def test_the_reading_itself():
    assert number("1e3") == 1000.0 and number(" 7 ", whole=True) == 7 and number("2e2", whole=True) == 200
    for bad, whole in [("1.5", True), ("1e400", False), ("1_000", False), ("١٢", False), ("0b1", True)]:
        with pytest.raises(ValueError):
            number(bad, whole)
    assert parse_age("90m") == 5400 and parse_size("1.5T") == int(1.5 * (1 << 40))
    for bad in ("inf", "nan", "1e400", "-1", "0x10", "", "1e300T"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_the_config_refuses_what_the_flag_refuses():
    """The flag's range is the field's: the same value in a config is refused by the field's own constraint."""
    from pydantic import ValidationError

    from terazi.schemas import EvalConfig
    from terazi.schemas.leakage import LeakageOptions

    for field, value in [("seed", -1), ("depth", 0), ("confidence", float("nan")), ("bootstrap_resamples", 10**30)]:
        with pytest.raises(ValidationError, match=field):
            EvalConfig.model_validate({"datasets": [{"path": "d"}], field: value})
    with pytest.raises(ValidationError, match="near_threshold"):
        LeakageOptions(near_threshold=float("inf"))
