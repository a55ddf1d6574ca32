"""The ``train`` sub-command: its parser (:func:`add_train`), the flags that stand for keys of
config.yaml's train section (:data:`TRAIN_FLAGS`) and the command (:func:`cmd_train`)."""

from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

from ..errors import ConfigError
from ..tasks.negatives import KINDS
from .values import _count_or_word, _flag, check_device

log = logging.getLogger("dynagnn")


def add_train(sub, options: bool = True) -> None:
    """The train sub-command's parser: the flags of the keys every run shares, then (``options``) one
    flag per option of the registered strategies, generated from their ``Options`` (which imports
    torch: the other stages' commands leave it out)."""
    tr = sub.add_parser("train", help="train a dynamic GNN on a store with one strategy, on one or many workers",
                        description="Train one model with one strategy on a snapshot store: steps of "
                                    "--batch-windows windows of --window snapshots, Adam, evaluation on "
                                    "held-out time steps, early stopping. Writes metrics.parquet (per epoch), "
                                    "timings.parquet (per epoch, worker and phase), comm.parquet (bytes per "
                                    "epoch, worker and collective) and model.pt (best epoch) in --out-dir, and "
                                    "with --figure training.png. Strategies: --strategy names one of the registered strategies "
                                    "(auto by default, which chooses among the others and writes auto.json; "
                                    "their options below say which take them). "
                                    "--workers N spawns N local processes (gloo on "
                                    "CPU, nccl on GPU); under torchrun the process joins torchrun's group "
                                    "instead (torchrun --nnodes M --nproc-per-node P -m dynagnn train ...). "
                                    "Options come from --options (JSON, what the workflow passes), then "
                                    "from the flags below, which win. A strategy's option given to a run of "
                                    "another strategy is refused, naming the strategies that take it.")
    tr.add_argument("store", type=Path, help="the snapshot store (a .zarr directory)")
    tr.add_argument("--out-dir", type=Path, required=True, help="directory of the outputs")
    tr.add_argument("--model", help="a model of dynagnn.models.ALL_MODELS: tgcn (default), evolvegcn_o, evolvegcn_h, "
                                      "wdgcn, mpnn_lstm, gcrn, cdgcn, tmgcn; on a store with events tgn, jodie, "
                                      "apan (with --strategy events); graphsage, gcn (with --strategy sampled); "
                                      "edgebank, edgebank_window (EdgeBank, trained by nothing: scored on the event "
                                      "task with --strategy events, on the snapshot link task with sequential); or a class "
                                      "of your own as package.module:Class (a DynamicGNN or StackedGNN, checked "
                                      "before it trains: docs/strategies.md, Your own model)")
    tr.add_argument("--strategy", help="auto (default: the fastest candidate strategy, workers, threads and options "
                                       "on this machine that fits --memory-budget, timed on real steps of the run "
                                       "first; its choice in OUT_DIR/auto.json) or one of the strategies listed "
                                       "below, each with the options it takes")
    tr.add_argument("--workers", type=int, help="worker processes (default 1; ignored under torchrun, "
                                                 "whose WORLD_SIZE wins)")
    tr.add_argument("--batch-windows", type=int, help="windows per optimiser step, B (default 1)")
    tr.add_argument("--options", help="training options as a JSON object (keys of config.yaml's train section)")
    tr.add_argument("--task", help="auto (default: classify with integer labels, regress with float labels, else "
                                   "link), link, classify (integer class labels) or regress")
    tr.add_argument("--epochs", type=int, help="maximum epochs (default 20)")
    tr.add_argument("--window", type=int, help="snapshots per window, l (default 4)")
    tr.add_argument("--hidden", type=int, help="embedding width (default 32)")
    tr.add_argument("--lr", type=float, help="Adam learning rate (default 0.01)")
    tr.add_argument("--device", help="cpu (default), cuda or cuda:N")
    tr.add_argument("--threads", type=int, help="torch intra-op threads per worker process (default: one "
                                                 "process: torch's choice; several: the cores divided among them)")
    tr.add_argument("--seed", type=int, help="seed of initial weights and negative samples (default 0)")
    tr.add_argument("--seeds", type=int, nargs="+", metavar="K",
                    help="train once per seed into OUT_DIR/seed-<K>/, then write OUT_DIR/seeds.parquet (each seed's "
                         "best epoch) and OUT_DIR/summary.parquet (the mean and std of every metric over the seeds)")
    tr.add_argument("--graph-input", help="tgcn: xh (default: its gates convolve [X_t ‖ H_{t-1}]) or x (only X_t, "
                                          "as PyG Temporal's TGCN; frames can reuse Â_t X_t)")
    tr.add_argument("--resume", type=Path, help="start from this model.pt (same model, task, width, data)")
    tr.add_argument("--overwrite", action="store_true",
                    help="replace a finished run of another model, strategy, store or config in --out-dir "
                         "(refused without it)")
    tr.add_argument("--figure", action="store_true",
                    help="also draw training.png and training.pdf in --out-dir (loss and every metric per epoch, "
                         "from metrics.parquet; the workflow draws them); off by default, as drawing imports "
                         "matplotlib, about 2 s of a short run's wall")
    if options:
        add_option_flags(tr)


# The flags of the keys every run shares (TrainConfig's); the strategies' options get theirs from
# their Options (add_option_flags).
TRAIN_FLAGS = ("model", "strategy", "task", "epochs", "window", "hidden", "lr", "device", "threads", "seed", "workers",
               "batch_windows", "graph_input")


def option_fields() -> dict[str, tuple[dict, list[str]]]:
    """Every option of the registered strategies: {key: (its JSON schema, the strategies that take it)},
    in registry order, then the chooser's own (taken by auto)."""
    from ..choose.request import AUTO, ChooserOptions
    from ..train.run_config import option_schemas, takers

    fields = {key: (schema, takers(key)) for key, schema in option_schemas().items()}
    return {**fields, **{key: (ChooserOptions.json_schema(key), [AUTO]) for key in ChooserOptions.declared()}}


def _flag_kind(schema: dict) -> dict:
    """argparse's type, nargs or action for a value of ``schema``."""
    types = schema.get("type", "string")
    types = [types] if isinstance(types, str) else [t for t in types if t != "null"]
    if types == ["boolean"]:
        return {"action": argparse.BooleanOptionalAction}
    if types == ["array"]:
        item = schema.get("items", {}).get("type")
        return {"nargs": "+", "type": {"integer": int, "number": float}.get(item, str)}
    if types == ["object"]:
        return {"type": _json_object, "metavar": "JSON"}
    if types == ["integer", "string"]:
        return {"type": _count_or_word}
    one = {"integer": int, "number": float}.get(types[0])
    # an enum's value is checked by the router against the schema, in the words config.yaml gets
    return {"type": one} if one else ({"metavar": "{" + ",".join(schema["enum"]) + "}"} if "enum" in schema else {})


def add_option_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per option of the registered strategies: its help is the option's, with its default and
    the strategies that take it, so no help text goes stale."""
    group = parser.add_argument_group("strategy options", "each taken only by the strategies named in its help")
    for key, (schema, takers) in option_fields().items():
        if not takers:
            continue
        default = json.dumps(schema.get("default"))
        group.add_argument(_flag(key), dest=key, default=None, **_flag_kind(schema),
                           help=f"{schema.get('description', '')} (default {default}; {', '.join(takers)})")


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("expected a JSON object")
    return value


def cmd_train(args) -> None:
    from ..api import train
    from ..choose.request import DEFAULT_STRATEGY, request_of
    from ..config import check_options

    options, names = {}, {}
    if args.options:
        try:
            options = json.loads(args.options)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--options is not valid JSON: {exc}") from exc
        check_options("train", options, "--options")  # keys and values: the router then routes them
    flags = TRAIN_FLAGS + tuple(option_fields())
    for key in flags:
        if getattr(args, key, None) is not None:
            options[key], names[key] = getattr(args, key), _flag(key)
    options.setdefault("strategy", DEFAULT_STRATEGY)   # a run that names no strategy: the chooser
    config = request_of(options, "--options", names)
    check_device(config.device, "--device" if args.device else "--options device")
    if args.seeds:
        if "seed" in options:
            raise ConfigError(f"--seeds with {names.get('seed', '--options seed')}: give one of them")
        if args.resume:
            raise ConfigError("--seeds with --resume: resume one seed's run, in its seed-<k> folder, on its own")
        from ..api import train_seeds

        result = train_seeds(args.store, args.out_dir, config, args.seeds, progress=not args.quiet,
                             overwrite=args.overwrite)
        if result is not None:
            _, summary = result
            log.info("%s/%s over seeds %s: %s", config.model, config.strategy, args.seeds,
                     ", ".join(f"{r.metric} {r.mean:.4f} ± {r.std:.4f}" for r in summary.itertuples()
                               if r.metric.startswith("test_")))
        return
    t0 = time.perf_counter()
    result = train(args.store, args.out_dir, config, resume=args.resume, progress=not args.quiet,
                   overwrite=args.overwrite)
    if result is None:  # a rank other than 0 of a torchrun job: rank 0 reports and draws
        return
    metrics, _ = result
    best = metrics[metrics["best"]].iloc[0]
    log.info("%s/%s: %d epochs in %.1fs; best epoch %d: %s", config.model, config.strategy, len(metrics),
             time.perf_counter() - t0, int(best["epoch"]),
             ", ".join(f"{k} {best[k]:.4f}" for k in metrics.columns
                       if k.startswith(("val_", "test_")) and k.split("_")[1] not in KINDS))  # the run's own negatives
    if args.figure:
        from ..report.figures import training_curves

        training_curves(metrics, args.out_dir / "training.png",
                        f"{args.store.parent.name}: {config.model}, {config.strategy}")
    else:   # an earlier run's figure is not this run's
        for name in ("training.png", "training.pdf"):
            (args.out_dir / name).unlink(missing_ok=True)
