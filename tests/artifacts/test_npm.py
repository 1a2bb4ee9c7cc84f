"""The npm tarballs: the runtime `auwgent` and the standalone compiler `auwgent-<platform>`,
installed into a fresh npm project on a PATH without Python, then the TypeScript example is
generated with `npx auwgent generate` and run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from auwgent._version import __version__

from .conftest import ROOT, clean_env, one

# One build per pytest process: --dist loadgroup keeps the artifact tests in one worker (a
# marker given at collection, which xdist reads when it groups).
pytestmark = pytest.mark.xdist_group("artifacts")

TSX = ROOT / "ts" / "node_modules" / ".bin" / "tsx"


def _platform() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (the npm artifacts need Node.js 20+)")
    shown = subprocess.run(
        [node, "-p", "process.platform + '-' + process.arch"], capture_output=True, text=True
    )
    return shown.stdout.strip()


def _members(tarball: Path) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(tarball) as archive:
        return {member.name: member for member in archive.getmembers()}


def _manifest(tarball: Path) -> dict[str, object]:
    with tarfile.open(tarball) as archive:
        data = archive.extractfile("package/package.json")
        assert data is not None
        value = json.loads(data.read())
    assert isinstance(value, dict)
    return value


def test_the_runtime_tarball_holds_compiled_javascript_and_declarations(dist: Path) -> None:
    tarball = one(dist, f"auwgent-{__version__}.tgz")
    names = set(_members(tarball))
    assert {"package/dist/index.js", "package/dist/index.d.ts", "package/bin/auwgent.js"} <= names
    sources = [n for n in names if n.endswith(".ts") and not n.endswith(".d.ts")]
    assert not sources and not [n for n in names if n.startswith(("package/src/", "package/test/"))]
    manifest = _manifest(tarball)
    assert manifest["bin"] == {"auwgent": "./bin/auwgent.js"}
    optional = manifest["optionalDependencies"]
    assert isinstance(optional, dict)
    assert optional[f"auwgent-{_platform()}"] == __version__


def test_the_platform_tarball_holds_an_executable_for_its_platform(dist: Path) -> None:
    platform = _platform()
    tarball = one(dist, f"auwgent-{platform}-{__version__}.tgz")
    exe = _members(tarball)["package/bin/auwgent"]
    assert exe.mode & 0o111, "the compiler is not executable"
    manifest = _manifest(tarball)
    system, cpu = platform.split("-")
    assert (manifest["os"], manifest["cpu"]) == ([system], [cpu])


def _no_python_path(folder: Path) -> str:
    """A PATH folder with node, npm, npx and sh only (npm runs package binaries through sh)."""
    folder.mkdir()
    for tool in ("node", "npm", "npx", "sh"):
        found = shutil.which(tool)
        assert found is not None, f"{tool} is not installed"
        (folder / tool).symlink_to(os.path.realpath(found))
    assert shutil.which("python3", path=str(folder)) is None
    assert shutil.which("python", path=str(folder)) is None
    return str(folder)


def _run(argv: list[str], cwd: Path, path: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, env=clean_env(path), timeout=600
    )
    assert result.returncode == 0, f"{argv}:\n{result.stdout}\n{result.stderr}"
    return result


def test_npx_auwgent_generates_the_typescript_example_without_python(
    dist: Path, tmp_path: Path
) -> None:
    path = _no_python_path(tmp_path / "bin")
    project = tmp_path / "app"
    project.mkdir()
    for name in ("app.ts", "auwgent.yml", "main.agent"):
        shutil.copy(ROOT / "examples" / "typescript" / name, project / name)
    manifest = {"name": "app", "private": True, "type": "module"}
    (project / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    tarballs = [
        str(one(dist, f"auwgent-{__version__}.tgz")),
        str(one(dist, f"auwgent-{_platform()}-{__version__}.tgz")),
    ]
    _run(["npm", "install", "--no-audit", "--no-fund", *tarballs], project, path)

    shown = _run(["npx", "auwgent", "--version"], project, path)
    assert shown.stdout == f"auwgent {__version__}\n"
    assert "not installed" not in shown.stderr  # the platform package's, not a fallback
    _run(["npx", "auwgent", "check"], project, path)
    _run(["npx", "auwgent", "generate"], project, path)
    assert (project / "generated" / "main.agent.types.ts").is_file()
    # tsx (the checkout's dev tool) only strips the types; `auwgent` comes from node_modules.
    out = _run([str(TSX), "app.ts"], project, path).stdout
    assert "[Main] tool_call: get_weather" in out
    assert "turn status: complete" in out


def test_the_standalone_compiler_runs_tests_formats_and_serves_the_language_server(
    dist: Path, tmp_path: Path
) -> None:
    tarball = one(dist, f"auwgent-{_platform()}-{__version__}.tgz")
    with tarfile.open(tarball) as archive:
        archive.extractall(tmp_path, filter="tar")
    exe = tmp_path / "package" / "bin" / "auwgent"
    weather = tmp_path / "weather"
    shutil.copytree(
        ROOT / "examples" / "weather", weather, ignore=shutil.ignore_patterns("generated")
    )
    tested = _run([str(exe), "test"], weather, "")
    assert "3 passed, 0 failed" in tested.stdout
    _run([str(exe), "fmt", "--check", "."], weather, "")

    body = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": None, "capabilities": {}}}
    ).encode()  # fmt: skip
    framed = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    exit_body = json.dumps({"jsonrpc": "2.0", "method": "exit"}).encode()
    framed += b"Content-Length: %d\r\n\r\n%s" % (len(exit_body), exit_body)
    result = subprocess.run(
        [str(exe), "lsp"], input=framed, capture_output=True, timeout=120, env=clean_env("")
    )
    header, _, reply = result.stdout.partition(b"\r\n\r\n")
    assert header.startswith(b"Content-Length:"), result.stdout + result.stderr
    length = int(header.split(b"\r\n")[0].split(b":")[1])
    answer = json.loads(reply[:length])
    assert answer["id"] == 1 and "capabilities" in answer["result"]
