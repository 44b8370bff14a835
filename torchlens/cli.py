"""The ``torchlens`` command line: ``lint`` and ``predict`` (``python -m torchlens`` too).

Exit status: 0 clean, 1 findings, 2 usage or parse error. Linting never imports torch.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from torchlens.analysis.errors import TorchLensError

_EPILOG = "Run `torchlens COMMAND --help` for a command's options."


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="torchlens",
        description="See inside PyTorch models: predict and lint how ops group into layers and passes.",
        epilog=_EPILOG,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

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
    lint.set_defaults(run=_lint)

    predict = commands.add_parser(
        "predict", help="the layers a model will have, before running it",
        description="Predict a model's layers, labels and passes from its source (the file is imported, "
                    "the model is not run).",
    )
    predict.add_argument("target", metavar="FILE:CLASS", help="a file and class (models/rnn.py:Seq2Seq) "
                                                              "or an importable module and class (pkg.models:Seq2Seq)")
    predict.add_argument("--json", action="store_true", help="print the prediction as JSON")
    predict.set_defaults(run=_predict)
    return parser


def _codes(text: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def _lint(args: argparse.Namespace) -> int:
    from torchlens.analysis.lint import RULES, as_json, as_text, lint_paths, load_config

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
    findings = lint_paths(args.paths, config)
    print(as_json(findings) if args.format == "json" else as_text(findings))
    if any(f.code == "TL000" for f in findings):
        return 2
    return 1 if findings else 0


def _predict(args: argparse.Namespace) -> int:
    from torchlens.analysis.predict import predict_target

    prediction = predict_target(args.target)
    print(json.dumps(prediction.to_json(), indent=2) if args.json else prediction)
    return 0


if __name__ == "__main__":
    sys.exit(main())
