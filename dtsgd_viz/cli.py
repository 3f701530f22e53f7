"""``dtsgd-viz``: command-line entry point."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="dtsgd-viz", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="record plain / momentum / Nesterov SGD on an 8-device mesh")
    demo.add_argument("--steps", type=int, default=100, help="updates per optimizer (default 100)")
    demo.add_argument("--save", metavar="DIR", help="also save the three recordings (.npz) in DIR")
    demo.add_argument("--out", metavar="DIR", default="demo-out",
                      help="write the report (figures, GIF, index.html) in DIR (default demo-out)")
    app = sub.add_parser("app", help="serve the comparison dashboard with Voila on 127.0.0.1")
    app.add_argument("--port", type=int, default=8866, help="port to listen on (default 8866)")
    app.add_argument("--open", action="store_true", help="open it in a web browser")
    args = parser.parse_args(argv)
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
        from .demo import main as demo_main
        return demo_main(steps=args.steps, save=args.save, out_dir=args.out)
    return 2


if __name__ == "__main__":
    sys.exit(main())
