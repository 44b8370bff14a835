"""The ``torchlens draw`` and ``torchlens trace`` commands (in :data:`torchlens.cli.COMMANDS`).

``torchlens draw FILE:CLASS`` draws the prediction (nothing runs); with ``--input EXPR`` it
builds the model (its class called with no arguments), traces it on those inputs and draws the
trace. ``torchlens trace FILE:CLASS --input EXPR`` prints the trace's table. Torch is imported
only when a command runs, so ``torchlens lint`` stays torch-free.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

TARGET_HELP = "a file and class (models/rnn.py:Seq2Seq) or an importable module and class (pkg.models:Seq2Seq)"
INPUT_HELP = "model inputs, e.g. 'randn(2, 7, 16)' or 'randn(2, 7), randint(0, 10, (2, 5))' (see torchlens.tensorexpr)"


def add_draw(commands: Any) -> None:
    """Add ``torchlens draw`` to the command line's subparsers."""
    draw = commands.add_parser(
        "draw", help="draw a model's layer graph (predicted, or traced with --input)",
        description="Draw a model's layers. Without --input the prediction is drawn (the model is not run); "
                    "with --input the model is built with no arguments, traced, and the trace drawn.",
    )
    draw.add_argument("target", metavar="FILE:CLASS", help=TARGET_HELP)
    draw.add_argument("-o", "--output", metavar="OUT", default=None,
                      help="file to write, format from its suffix: .svg .png .pdf .dot (default: CLASS.svg)")
    draw.add_argument("--view", choices=("rolled", "unrolled"), default="rolled", help="one node per layer or per op")
    draw.add_argument("--depth", type=int, default=None, help="draw modules deeper than this as one node each")
    draw.add_argument("--input", metavar="EXPR", default=None, help=INPUT_HELP)
    draw.set_defaults(run=run_draw)


def add_trace(commands: Any) -> None:
    """Add ``torchlens trace`` to the command line's subparsers."""
    trace = commands.add_parser("trace", help="trace a model on inputs and print its table",
                                description="Build the model (its class called with no arguments), trace it "
                                            "on --input and print the table of layers and modules.")
    trace.add_argument("target", metavar="FILE:CLASS", help=TARGET_HELP)
    trace.add_argument("--input", metavar="EXPR", required=True, help=INPUT_HELP)
    trace.add_argument("--depth", type=int, default=None, help="show modules deeper than this as one row each")
    trace.add_argument("--limit", type=int, default=None, help="show at most this many rows")
    trace.set_defaults(run=run_trace)


def _traced(target: str, expression: str) -> Any:
    from .api import trace
    from .errors import TorchLensTypeError
    from torchlens.analysis.targets import load_class
    from .tensorexpr import parse_inputs

    inputs = parse_inputs(expression)
    cls = load_class(target)
    try:
        model = cls()
    except TypeError as error:
        raise TorchLensTypeError(f"{target}: the class could not be built with no arguments ({error}); "
                                 "give its constructor defaults, or trace it from Python") from None
    return trace(model.eval(), *inputs)


def run_draw(args: argparse.Namespace) -> int:
    out = Path(args.output or f"{args.target.rpartition(':')[2]}.svg")
    if args.input is None:
        from .predict import predict
        from torchlens.analysis.targets import load_class

        predict(load_class(args.target)).draw(path=out, depth=args.depth)
    else:
        _traced(args.target, args.input).draw(view=args.view, depth=args.depth, path=out)
    print(f"wrote {out}")
    return 0


def run_trace(args: argparse.Namespace) -> int:
    print(_traced(args.target, args.input).table(depth=args.depth, limit=args.limit))
    return 0
