"""``dtsgd-viz``: command-line entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

GIF_FRAMES = 20  # the report's default (report.GIF_FRAMES; not imported: --help stays light)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="dtsgd-viz",
        description="See what a distributed (DTensor) SGD optimizer does, shard by shard: "
        "run the demo, serve the dashboard, or launch a multi-client run.",
        epilog="Each command has its own --help.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="record plain / momentum / Nesterov SGD on an 8-device mesh")
    demo.add_argument("--steps", type=int, default=100, help="updates per optimizer (default 100)")
    demo.add_argument("--save", metavar="DIR", help="also save the three recordings (.npz) in DIR")
    demo.add_argument(
        "--out",
        metavar="DIR",
        default="demo-out",
        help="write the report (figures, GIF, index.html) in DIR (default demo-out)",
    )
    demo.add_argument(
        "--gif-frames",
        metavar="N",
        default=None,
        help=f"frames of the report's animation paths.gif, an integer >= 2 (default {GIF_FRAMES}; fewer draw faster)",
    )
    app = sub.add_parser("app", help="serve the comparison dashboard with Voila on 127.0.0.1")
    app.add_argument("--port", type=int, default=8866, help="port to listen on (default 8866)")
    app.add_argument("--open", action="store_true", help="open it in a web browser")
    _add_launch(sub)
    export = sub.add_parser(
        "export",
        help="write a recording (.npz, store folder or parts) as TensorBoard events",
        description="Write a saved recording or a store as TensorBoard events: per-block norms, "
        "means and max |x| as scalars and each variable's values as histograms, by update.",
    )
    export.add_argument("recording", help="a .npz file, a store folder (run.zarr) or a parts folder")
    export.add_argument(
        "--tensorboard", metavar="LOGDIR", required=True, help="the TensorBoard log folder to write the events in"
    )
    export.add_argument(
        "--run", metavar="NAME", default=None, help="write into LOGDIR/NAME, a run of that name in TensorBoard"
    )
    export.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an earlier dtsgd_viz export in that folder (without it, "
        "an earlier export is refused, never appended to)",
    )
    export.add_argument(
        "--max-histograms",
        type=int,
        default=200,
        metavar="N",
        help="histograms of at most N updates per variable (default 200)",
    )
    args = parser.parse_args(argv)
    if args.command == "export":
        return _export(parser, args)
    if args.command == "launch":
        from .launch import launch

        try:
            return launch(
                args.script,
                args.args,
                clients=args.clients,
                devices_per_client=args.devices_per_client,
                timeout=args.timeout,
                log_dir=args.logs,
            )
        except ValueError as e:
            parser.error(str(e))
    if args.command == "app":
        from .app import serve, voila_command

        try:
            voila_command(args.port)
        except (ValueError, RuntimeError) as e:
            parser.error(str(e))
        return serve(args.port, open_browser=args.open)
    if args.command == "demo":
        if args.steps < 1:
            parser.error(f"--steps must be >= 1 (received {args.steps})")
        gif_frames = _gif_frames(parser, args.gif_frames)
        from .demo import main as demo_main

        return demo_main(steps=args.steps, save=args.save, out_dir=args.out, gif_frames=gif_frames)
    return 2


def _gif_frames(parser, text):
    """``--gif-frames``: an integer >= 2 (a GIF needs two frames to move), else a usage
    error naming what was received; ``GIF_FRAMES`` when not given."""
    if text is None:
        return GIF_FRAMES
    try:
        frames = int(text)
    except ValueError:
        frames = None
    if frames is None or frames < 2:
        parser.error(f"--gif-frames must be an integer >= 2 (received {text})")
    return frames


def _export(parser, args) -> int:
    from ..recording import RecordingFileError, load_recording

    try:
        recording = load_recording(args.recording)
        path = recording.to_tensorboard(
            args.tensorboard, run=args.run, overwrite=args.overwrite, max_histograms=args.max_histograms
        )
    except (RecordingFileError, ValueError, ImportError, FileNotFoundError, FileExistsError) as e:
        parser.error(str(e))
    print(
        f"wrote {len(recording)} updates of {len(recording.variables)} variable(s) to {path}; "
        f"view them with: tensorboard --logdir {args.tensorboard}"
    )
    return 0


def _add_launch(sub):
    launch = sub.add_parser(
        "launch",
        help="run a script as N DTensor clients on this machine (127.0.0.1)",
        description="Run `python SCRIPT ARGS...` as the clients of a multi-client DTensor run "
        "on 127.0.0.1 (free ports, DTENSOR_* variables set), each with its own log file; "
        "stops every client as soon as one fails and exits with its status.",
    )
    launch.add_argument("--clients", type=int, required=True, metavar="N", help="number of clients (processes)")
    launch.add_argument(
        "--devices-per-client", type=int, default=4, metavar="K", help="virtual CPU devices per client (default 4)"
    )
    launch.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop every client after this long (exit status 124)"
    )
    launch.add_argument(
        "--logs",
        metavar="DIR",
        default=None,
        help="write client-<i>.log files in DIR (default: a new temporary folder, printed at the start)",
    )
    launch.add_argument("script", help="the Python script every client runs")
    launch.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")


if __name__ == "__main__":
    sys.exit(main())
