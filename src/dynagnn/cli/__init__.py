"""Command line: one sub-command per stage, each a thin front over the library.

    python -m dynagnn ingest  --config config.yaml --dataset collegemsg --out results/collegemsg/store.zarr
    python -m dynagnn stats   results/collegemsg/store.zarr --out results/collegemsg/stats.parquet
    python -m dynagnn profile --device cpu --out-dir results/cost/cpu --stores results/collegemsg/store.zarr
    python -m dynagnn schedule results/collegemsg/store.zarr --predictor results/cost/cpu/predictor.json \
                              --model tgcn --workers 2 --out results/collegemsg/tgcn/plan-2.json
    python -m dynagnn train   results/collegemsg/store.zarr --out-dir results/collegemsg/tgcn/sequential --model tgcn
    python -m dynagnn info    results/collegemsg/store.zarr

Errors in the input (a missing file, a malformed row, a config typo, a bad flag, a store of another
version) print one line naming what is wrong and exit with status 2; nothing half-written is left
behind. A flag that stands for a config key (:data:`FLAG_KEYS`) is checked against that key's schema,
the check config.yaml gets, before the stage starts; so are the output paths (:data:`OUTPUTS`).

This module assembles the parser and runs a sub-command; each sub-command's parser
(``add_<stage>``) stands beside its command (``cmd_<stage>``) in :mod:`.stages` (ingest to
schedule), :mod:`.train` and :mod:`.report` (compare to check-config); the flags' and outputs'
checks are :mod:`.checks`, the flag values no config key checks :mod:`.values`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .. import __version__
from ..cpu_load import note_start
from ..errors import DynagnnError
from .checks import FLAG_KEYS, OUTPUTS, check_flags, check_outputs
from .report import (add_check_config, add_claims, add_compare, add_compare_sampled, add_compare_sven, add_info,
                     add_runtimes, add_seeds, add_study, cmd_check_config, cmd_claims, cmd_compare, cmd_compare_sampled,
                     cmd_compare_sven, cmd_info, cmd_runtimes, cmd_seeds, cmd_study)
from .stages import (add_analyze, add_ingest, add_profile, add_schedule, add_stats, cmd_analyze, cmd_ingest,
                     cmd_profile, cmd_schedule, cmd_stats)
from .train import TRAIN_FLAGS, add_train, cmd_train

__all__ = ["COMMANDS", "FLAG_KEYS", "OUTPUTS", "TRAIN_FLAGS", "main"]

log = logging.getLogger("dynagnn")


class _Parser(argparse.ArgumentParser):
    """argparse's errors on one line, as dynagnn's own (argparse prints the usage, then the error),
    and an unknown flag blamed on the stage's parser, whose --help lists the flags it knows."""

    stages: dict[str, argparse.ArgumentParser] = {}

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.stages.get(getattr(parsed, "stage", None), self).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _parser(train_options: bool = True) -> argparse.ArgumentParser:
    """The parser of every stage; ``train_options``: with the train stage's strategy-option flags, which
    are generated from the strategies' registry (importing torch, which the other stages need not)."""
    p = _Parser(
        prog="dynagnn",
        description="Fast training of dynamic graph neural networks: the stages of the dynagnn workflow. "
                    "Snakemake runs them for you (`snakemake --cores N`); each also runs alone.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `python -m dynagnn <stage> --help` for a stage's options.")
    p.add_argument("--version", action="version", version=f"dynagnn {__version__}")
    p.add_argument("-v", "--verbose", action="store_true", help="log debug messages")
    p.add_argument("-q", "--quiet", action="store_true", help="log warnings only, no progress bars")
    sub = p.add_subparsers(dest="stage", required=True, metavar="stage")
    p.stages = sub.choices
    for add in (add_ingest, add_stats, add_analyze, add_profile, add_schedule, add_train, add_compare,
                add_compare_sampled, add_compare_sven, add_runtimes, add_seeds, add_study, add_claims, add_info,
                add_check_config):
        if add is add_train:
            add(sub, train_options)
        else:
            add(sub)
    return p


def _setup_logging(verbose: bool, quiet: bool) -> None:
    """dynagnn's own messages at the chosen level; other libraries' (Dask's chatter) at WARNING."""
    level = logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(lambda r: r.name.startswith("dynagnn") or r.levelno >= logging.WARNING)
    logging.basicConfig(level=level, handlers=[handler], force=True)


COMMANDS = {"ingest": cmd_ingest, "stats": cmd_stats, "analyze": cmd_analyze, "profile": cmd_profile,
            "schedule": cmd_schedule, "train": cmd_train, "compare": cmd_compare, "compare-sampled": cmd_compare_sampled,
            "compare-sven": cmd_compare_sven, "runtimes": cmd_runtimes, "seeds": cmd_seeds, "study": cmd_study,
            "claims": cmd_claims,
            "info": cmd_info, "check-config": cmd_check_config}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    note_start()   # the imports to come are the window auto reads other jobs' load in (cpu_load)
    args = _parser(train_options="train" in argv).parse_args(argv)
    _setup_logging(args.verbose, args.quiet)
    try:
        check_flags(args)
        check_outputs(args)
        COMMANDS[args.stage](args)
        sys.stdout.flush()  # here, so that a closed pipe is met below and not at exit
    except DynagnnError as exc:
        print(f"dynagnn {args.stage}: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader of stdout went away (`dynagnn info | head`): stop quietly, the Python docs' way
        # (stdout to devnull, so that the interpreter's last flush does not fail again).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        # The machine's refusal (a full disk, a permission the checks above could not foresee): one
        # line as well; the writes are atomic, so nothing half-written is left. -v shows where.
        log.debug("OSError in %s", args.stage, exc_info=True)
        print(f"dynagnn {args.stage}: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"dynagnn {args.stage}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not _out_of_memory(exc):
            raise
        # a memory limit (ulimit, a cgroup, the device's memory): one line; the writes are atomic
        log.debug("out of memory in %s", args.stage, exc_info=True)
        detail = " ".join(str(exc).splitlines())[:200]
        print(f"dynagnn {args.stage}: error: out of memory ({type(exc).__name__}{': ' + detail if detail else ''}); "
              "nothing was written: use a smaller model, window, batch or cache, fewer workers, or more memory",
              file=sys.stderr)
        return 2
    return 0


def _out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is a memory limit: Python's MemoryError, or torch's OutOfMemoryError (a
    RuntimeError, on a device or in the allocator)."""
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"
