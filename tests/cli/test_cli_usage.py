"""The command line's usage errors, in this process (no demo, no TensorFlow run): each bad
argument is refused before any work starts, with argparse's exit status 2 and a message
naming what was received and what is allowed."""

import pytest

from dtsgd_viz.cli.main import main


def refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, said",
    [
        (["demo", "--steps", "0"], "--steps must be >= 1 (received 0)"),
        (["demo", "--gif-frames", "1"], "--gif-frames must be an integer >= 2 (received 1)"),
        (["demo", "--gif-frames", "many"], "--gif-frames must be an integer >= 2 (received many)"),
        (["demo", "--steps", "ten"], "invalid int value: 'ten'"),
        ([], "the following arguments are required: command"),
        (["paint"], "invalid choice: 'paint'"),
    ],
)
def test_a_bad_argument_is_a_usage_error_naming_it(argv, said, capsys):
    assert said in refused(argv, capsys)


def test_export_of_a_missing_recording_names_the_path(tmp_path, capsys):
    missing = tmp_path / "nothing.npz"
    err = refused(["export", str(missing), "--tensorboard", str(tmp_path / "tb")], capsys)
    assert str(missing) in err
    assert not (tmp_path / "tb").exists()  # nothing written


def test_launch_refuses_a_client_count_below_one(tmp_path, capsys):
    script = tmp_path / "train.py"
    script.write_text("print('never run')\n")
    err = refused(["launch", "--clients", "0", str(script)], capsys)
    assert "clients must be an integer >= 1. Received: 0." in err


def test_help_names_every_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(cmd in out for cmd in ("demo", "app", "launch", "export"))
