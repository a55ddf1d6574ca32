"""The offline GPU bundle (tools/gpu_bundle.py), offline: it resolves the pinned list from a local
folder of wheels and fails in one line naming a missing one; check names what a bundle lacks (a wheel,
the target's tags, a requirement); its install never touches torch; the pinned list covers pyproject's
runtime dependencies."""

import re
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_bundle as gb  # noqa: E402


def fake_wheel(folder: Path, requirement: str, tag: str = "py3-none-any", requires: tuple[str, ...] = ()) -> Path:
    """A minimal valid wheel of ``name==version`` (what pip reads when it downloads one)."""
    name, version = requirement.split("==")
    dist = re.sub(r"[-_.]+", "_", name)
    path = folder / f"{dist}-{version}-{tag}.whl"
    info = f"{dist}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{info}/METADATA", meta)
        z.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n")
        z.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def index(tmp_path):
    folder = tmp_path / "index"
    folder.mkdir()
    for req in gb.BUNDLE:
        fake_wheel(folder, req)
    return folder


# ---- resolving offline -----------------------------------------------------------------------------

def test_resolves_offline_from_a_local_folder(index, tmp_path, capsys):
    assert gb.main(["download", "--dest", str(tmp_path / "bundle"), "--find-links", str(index), "--no-index",
                    "--no-project"]) == 0
    assert re.fullmatch(rf"gpu-bundle: {len(gb.BUNDLE)} wheels, \d+\.\d MiB in .*\n", capsys.readouterr().out)
    assert sorted(gb._wheel_name(w) for w in gb.wheels(tmp_path / "bundle")) == sorted(gb._name(r) for r in gb.BUNDLE)
    assert 0 < gb.size_mib(tmp_path / "bundle") < gb.LIMIT_MIB


def test_the_download_command_targets_cp312_manylinux(tmp_path):
    cmd = gb.download_command(tmp_path, pip=["pip"])
    assert cmd[:4] == ["pip", "download", "--no-deps", "--only-binary=:all:"]
    assert cmd[cmd.index("--python-version") + 1] == "3.12" and cmd[cmd.index("--implementation") + 1] == "cp"
    platforms = [cmd[i + 1] for i, c in enumerate(cmd) if c == "--platform"]
    assert {"manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"} <= set(platforms)
    assert "--no-index" not in cmd and cmd[-len(gb.BUNDLE):] == list(gb.BUNDLE)
    assert {"--no-index", "--find-links"} <= set(gb.download_command(tmp_path, find_links=tmp_path))


def test_a_missing_wheel_is_one_line_naming_it(index, tmp_path, capsys):
    next(index.glob("pymetis-*.whl")).unlink()
    code = gb.main(["download", "--dest", str(tmp_path / "bundle"), "--find-links", str(index), "--no-index"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "pymetis==2025.2.2" in err, err


def test_a_bundle_over_the_limit_is_one_line(index, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gb, "LIMIT_MIB", 0.001)
    code = gb.main(["download", "--dest", str(tmp_path / "bundle"), "--find-links", str(index), "--no-project"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "over the bundle's limit" in err, err


def test_stale_versions_are_replaced(index, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    fake_wheel(bundle, "zarr==3.0.0")
    gb.download(bundle, find_links=index, project=False)
    assert [w.name for w in bundle.glob("zarr-*.whl")] == ["zarr-3.1.6-py3-none-any.whl"]


# ---- check -----------------------------------------------------------------------------------------

def test_check_names_what_the_bundle_lacks(index, tmp_path, capsys):
    (index / "extra").mkdir()
    next(index.glob("zarr-*.whl")).unlink()
    next(index.glob("tblib-*.whl")).unlink()
    with pytest.raises(gb.BundleError, match=r"no wheel for zarr==3\.1\.6, tblib==3\.2\.2, dynagnn \(the project's own wheel\)"):
        gb.check(index)
    assert gb.main(["check", "--bundle", str(index)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "zarr==3.1.6" in err and "tblib==3.2.2" in err


def test_check_passes_a_complete_bundle(index, capsys):
    fake_wheel(index, "dynagnn==0.1.0")
    assert gb.main(["check", "--bundle", str(index)]) == 0
    assert f"{len(gb.BUNDLE) + 1} wheels" in capsys.readouterr().out


@pytest.mark.parametrize("tag, ok", [
    ("cp312-cp312-manylinux_2_24_x86_64.manylinux_2_28_x86_64", True),
    ("cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64", True),
    ("cp311-abi3-manylinux1_x86_64.manylinux_2_5_x86_64", True),
    ("py2.py3-none-any", True),
    ("cp311-cp311-manylinux_2_17_x86_64", False),      # another python
    ("cp312-cp312-manylinux_2_17_aarch64", False),     # another machine
    ("cp312-cp312-macosx_11_0_arm64", False),
    ("cp312-cp312-manylinux_2_34_x86_64", False),      # newer glibc than the platforms asked for
    ("cp313-abi3-manylinux_2_17_x86_64", False),
])
def test_check_wants_cp312_manylinux_x86_64(index, tag, ok):
    next(index.glob("pymetis-*.whl")).unlink()
    fake_wheel(index, "pymetis==2025.2.2", tag=tag)
    assert gb.compatible(next(index.glob("pymetis-*.whl"))) is ok
    if ok:
        gb.check(index, with_project=False)
    else:
        with pytest.raises(gb.BundleError, match=r"no wheel for pymetis==2025\.2\.2 for cp312 manylinux x86_64"):
            gb.check(index, with_project=False)


def test_check_follows_the_wheels_requirements(index):
    """A requirement neither bundled nor in the image is named; markers and extras are read for the
    target python (importlib_metadata only below 3.12; dask[distributed] wants distributed)."""
    next(index.glob("dask-*.whl")).unlink()
    fake_wheel(index, "dask==2026.8.0", requires=(
        "click>=8.1", "partd>=1.4", 'importlib_metadata>=4.13; python_version < "3.12"',
        'distributed==2026.8.0; extra == "distributed"', 'bokeh>=3; extra == "diagnostics"'))
    fake_wheel(index, "dynagnn==0.1.0", requires=("dask[distributed]>=2024.12", "torch>=2.11"))
    gb.check(index)
    next(index.glob("distributed-*.whl")).unlink()
    with pytest.raises(gb.BundleError, match=r"no wheel for distributed==2026\.8\.0$"):
        gb.check(index)
    fake_wheel(index, "distributed==2026.8.0", requires=("tornado>=6.2", "sortedcontainers", "lz4>=4"))
    with pytest.raises(gb.BundleError, match=r"^\S+: neither the bundle nor the GPU image has lz4 \(needed by distributed\)$"):
        gb.check(index)


def test_check_refuses_two_versions_and_unlisted_wheels(index):
    fake_wheel(index, "zarr==3.0.0")
    with pytest.raises(gb.BundleError, match="two wheels of zarr"):
        gb.check(index, with_project=False)
    next(index.glob("zarr-3.0.0-*.whl")).unlink()
    fake_wheel(index, "requests==2.34.2")
    with pytest.raises(gb.BundleError, match="holds requests, which the pinned list does not name"):
        gb.check(index, with_project=False)


# ---- install ---------------------------------------------------------------------------------------

def test_install_never_touches_torch(index, tmp_path):
    cmd = gb.install_command(index, tmp_path / "site", python="python3")
    assert cmd[:4] == ["python3", "-m", "pip", "install"]
    assert {"--no-index", "--no-deps", "--no-compile"} <= set(cmd)
    assert cmd[cmd.index("--target") + 1] == str(tmp_path / "site")
    wheels = [c for c in cmd if c.endswith(".whl")]
    assert "*" not in " ".join(cmd) and sorted(wheels) == sorted(map(str, index.glob("*.whl")))
    assert len(wheels) == len(gb.BUNDLE) and not any(Path(w).name.startswith(("torch", "nvidia")) for w in wheels)


@pytest.mark.parametrize("intruder", ["torch==2.11.0", "torchvision==0.26.0", "nvidia-cublas-cu12==12.8.4.1",
                                      "triton==3.5.0"])
def test_a_bundle_with_torch_is_refused(index, tmp_path, capsys, intruder):
    fake_wheel(index, intruder, tag="cp312-cp312-manylinux_2_28_x86_64")
    with pytest.raises(gb.BundleError, match="would replace the GPU image's own torch"):
        gb.install_command(index, tmp_path / "site")
    assert gb.main(["install", "--bundle", str(index), "--target", str(tmp_path / "site"), "--dry-run"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and gb._name(intruder) in err
    assert not (tmp_path / "site").exists()


def test_install_dry_run_prints_the_command(index, tmp_path, capsys):
    assert gb.main(["install", "--bundle", str(index), "--target", str(tmp_path / "site"), "--dry-run",
                    "--python", "python3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("python3 -m pip install") and "--no-index --no-deps" in out and str(tmp_path / "site") in out
    assert not (tmp_path / "site").exists()


# ---- drift -----------------------------------------------------------------------------------------

def test_the_pinned_list_covers_pyproject():
    """Drift: each runtime dependency of pyproject.toml is bundled, at a version its specifier allows,
    or in the image (IMAGE_HAS); nothing is both."""
    deps = [Requirement(d) for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    names = {gb._norm(d.name) for d in deps}
    pinned = {gb._name(r): gb._version(r) for r in gb.BUNDLE}
    assert names - set(pinned) - gb.IMAGE_HAS == set()
    assert gb.IMAGE_HAS <= names   # no stale entry
    assert not (set(pinned) & (gb.IMAGE_HAS | gb.IMAGE_PROVIDES))
    for d in deps:
        if gb._norm(d.name) in pinned:
            assert d.specifier.contains(pinned[gb._norm(d.name)]), (d, pinned[gb._norm(d.name)])
        for extra in d.extras:   # dask[distributed]
            assert gb._norm(extra) in pinned, d
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[A-Za-z0-9.+]+", r) for r in gb.BUNDLE)
