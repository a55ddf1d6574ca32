"""The offline GPU bundle (tools/gpu_bundle.py), offline: it resolves the pinned list from a local
folder of wheels and fails in one line naming a missing one; its install never touches torch; the
pinned list covers pyproject's runtime dependencies."""

import re
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import gpu_bundle as gb  # noqa: E402


def fake_wheel(folder: Path, requirement: str) -> Path:
    """A minimal valid pure-Python wheel of ``name==version`` (what pip reads when it downloads one)."""
    name, version = requirement.split("==")
    dist = name.replace("-", "_")
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    info = f"{dist}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    return path


@pytest.fixture
def index(tmp_path):
    folder = tmp_path / "index"
    folder.mkdir()
    for req in gb.BUNDLE:
        fake_wheel(folder, req)
    return folder


def test_resolves_offline_from_a_local_folder(index, tmp_path):
    size = gb.download(tmp_path / "bundle", find_links=index, project=False)
    assert sorted(gb._wheel_name(w) for w in gb.wheels(tmp_path / "bundle")) == sorted(gb._name(r) for r in gb.BUNDLE)
    assert 0 < size < gb.LIMIT_MIB


def test_a_missing_wheel_is_one_line_naming_it(index, tmp_path, capsys):
    next(index.glob("pymetis-*.whl")).unlink()
    code = gb.main(["download", "--dest", str(tmp_path / "bundle"), "--find-links", str(index)])
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and "pymetis==2025.2.2" in err


def test_check_names_what_the_bundle_lacks(index, tmp_path):
    (index / "extra").mkdir()
    next(index.glob("zarr-*.whl")).unlink()
    with pytest.raises(gb.BundleError, match=r"no wheel for zarr==3\.1\.6, dynagnn \(the project's own wheel\)"):
        gb.check(index)


def test_install_never_touches_torch(index, tmp_path):
    cmd = gb.install_command(index, tmp_path / "site", python="python3")
    assert cmd[:4] == ["python3", "-m", "pip", "install"]
    assert {"--no-index", "--no-deps"} <= set(cmd) and cmd[cmd.index("--target") + 1] == str(tmp_path / "site")
    wheels = [c for c in cmd if c.endswith(".whl")]
    assert len(wheels) == len(gb.BUNDLE) and not any(Path(w).name.startswith(("torch", "nvidia")) for w in wheels)
    fake_wheel(index, "torch==2.11.0")
    with pytest.raises(gb.BundleError, match="would replace the GPU image's own torch"):
        gb.install_command(index, tmp_path / "site")


def test_the_pinned_list_covers_pyproject():
    """Drift: each runtime dependency of pyproject.toml is bundled or in the image (IMAGE_HAS)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    names = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower() for d in deps}
    bundled = {gb._name(r) for r in gb.BUNDLE}
    assert names - bundled - gb.IMAGE_HAS == set()
    assert gb.IMAGE_HAS <= names   # no stale entry
