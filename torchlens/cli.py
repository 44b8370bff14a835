"""The ``torchlens`` command line: ``lint``, ``predict``, ``draw`` and ``trace`` (``python -m torchlens`` too).

Exit status: 0 clean, 1 findings, 2 usage or input error (a bad option, a bad configuration,
a file that cannot be read or parsed, a target that cannot be imported). The ``lint`` path never
imports torch.

A command is a function in :data:`COMMANDS` that adds its subparser and sets ``run`` (a
function of the parsed arguments returning the exit status). A command module imports what
it needs inside ``run``, so ``torchlens lint`` stays torch-free.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

from torchlens import __version__
from torchlens.analysis.errors import TorchLensError

from .draw_cli import add_draw, add_trace


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error argparse already printed
        return stop.code if isinstance(stop.code, int) else 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except TorchLensError as error:
        print(f"torchlens {args.command}: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `torchlens lint ... | head`: the reader left, stop quietly
        sys.stderr.close()
        return 1


def build_parser() -> argparse.ArgumentParser:
    """The parser with every command of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="torchlens",
        description="See inside PyTorch models: predict and lint how ops group into layers and passes.",
        epilog="Run `torchlens COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"torchlens {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in COMMANDS:
        add(commands)
    return parser


# -- lint --------------------------------------------------------------------------------------


def add_lint(commands: argparse._SubParsersAction) -> None:
    lint = commands.add_parser(
        "lint", help="flag grouping a user may not expect, from source alone",
        description="Lint model source for grouping a user may not expect (no model is run). "
                    "Configure in pyproject.toml under [tool.torchlens.lint] (select, ignore); "
                    "suppress one line with `# torchlens: noqa: TL101`.",
    )
    lint.add_argument("paths", nargs="*", metavar="PATH", help="files or folders (folders: every *.py under them)")
    lint.add_argument("--select", metavar="CODES", default="", help="comma-separated codes or prefixes to run (ALL for every rule)")
    lint.add_argument("--ignore", metavar="CODES", default="", help="comma-separated codes or prefixes to skip")
    lint.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    lint.add_argument("--explain", metavar="CODE", help="print what a rule means, with an example, and exit")
    lint.add_argument("--list", action="store_true", help="list every rule and whether it is on by default")
    lint.add_argument("--fix", action="store_true",
                      help="rewrite the problems that have a certain fix (TL301), then report the rest")
    lint.add_argument("--diff", action="store_true",
                      help="print the rewrites --fix would make as a unified diff, change nothing")
    lint.set_defaults(run=_lint)


def _codes(text: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def _lint(args: argparse.Namespace) -> int:
    from torchlens.analysis.lint import NOT_LINTED, RULES, as_json, as_text, lint_paths, load_config

    if args.explain:
        rule = RULES.get(args.explain.upper())
        if rule is None:
            print(f"torchlens lint: no rule {args.explain!r}; known: {', '.join(RULES)}", file=sys.stderr)
            return 2
        print(f"{rule.code} ({rule.name}, {rule.severity}{'' if rule.default else ', off by default'})\n")
        print(rule.explain)
        return 0
    if args.list:
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:<26} {rule.severity:<8} {'on' if rule.default else 'off'}")
        return 0
    if not args.paths:
        print("torchlens lint: give at least one file or folder (or --explain CODE, --list)", file=sys.stderr)
        return 2
    missing = [p for p in args.paths if not Path(p).exists()]
    if missing:
        print(f"torchlens lint: no such file or folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    config = load_config(Path(args.paths[0])).merged(_codes(args.select), _codes(args.ignore))
    report = lint_paths(args.paths, config)
    for skipped in report.skipped:
        print(f"torchlens lint: skipped {skipped.path}: {skipped.reason}", file=sys.stderr)
    findings = list(report.findings)
    if args.fix or args.diff:
        from torchlens.analysis.lint.fix import fix_files

        run = fix_files(findings, write=args.fix)
        for refused in run.refused:
            print(f"torchlens lint: not fixed: {refused}", file=sys.stderr)
        if args.diff:
            print("".join(run.diffs), end="")
            print(f"torchlens lint: --fix would fix {_count(run.fixed)} in {_count(run.diffs, 'file')}",
                  file=sys.stderr)
            return 1 if run.diffs else 0
        findings = [f for f in findings if f not in set(run.fixed)]
        print(f"torchlens lint: fixed {_count(run.fixed)} in {_count(run.diffs, 'file')}", file=sys.stderr)
    print(as_json(findings) if args.format == "json" else as_text(findings))
    if any(f.code in NOT_LINTED for f in findings):
        return 2
    return 1 if findings else 0


def _count(items: Sequence[object], noun: str = "problem") -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


# -- predict -----------------------------------------------------------------------------------


def add_predict(commands: argparse._SubParsersAction) -> None:
    predict = commands.add_parser(
        "predict", help="the layers a model will have, before running it",
        description="Predict a model's layers, labels and passes from its source (the file is imported "
                    "as `python -m` would, the model is not run).",
    )
    predict.add_argument("target", metavar="FILE:CLASS", help="a file and class (models/rnn.py:Seq2Seq) "
                                                              "or an importable module and class (pkg.models:Seq2Seq)")
    predict.add_argument("--json", action="store_true", help="print the prediction as JSON")
    predict.set_defaults(run=_predict)


def _predict(args: argparse.Namespace) -> int:
    from torchlens.analysis.targets import load_class

    cls = load_class(args.target)
    from torchlens.predict import predict

    prediction = predict(cls)
    print(json.dumps(prediction.to_json(), indent=2) if args.json else prediction)
    return 0


#: Every command, in the order ``--help`` lists them.
COMMANDS: tuple[Callable[[argparse._SubParsersAction], None], ...] = (add_lint, add_predict, add_draw, add_trace)


if __name__ == "__main__":
    sys.exit(main())
