"""Loading projects: auwgent.yml, folders, single files, and clear configuration errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from auwgent.errors import ConfigError
from auwgent.project import load_project

EXAMPLES = Path(__file__).parents[1] / "examples"
AGENT = 'agent Main {\n default config {\n model: gemini("m")\n prompt: "p"\n }\n}\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_yml_with_a_single_source_file(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": 'source: "main.agent"\noutput: "gen"\ntargets:\n  - py\n'})
    write(tmp_path, {"main.agent": AGENT, "other.agent": AGENT})
    for given in (tmp_path, tmp_path / "auwgent.yml"):
        project = load_project(given)
        assert project.root == tmp_path.resolve()
        assert project.files == ((tmp_path / "main.agent").resolve(),)
        assert project.output == (tmp_path / "gen").resolve()
        assert project.targets == ("py",)
        assert project.config_path == (tmp_path / "auwgent.yml").resolve()
        assert project.source_root == tmp_path.resolve()


def test_yml_with_a_source_folder_is_recursive_and_sorted(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": 'source: "src"\ntargets: [py, ts]\n'})
    write(
        tmp_path,
        {"src/b.agent": AGENT, "src/a/z.agent": "", "src/.hidden/x.agent": "", "src/n.txt": ""},
    )
    write(tmp_path, {"src/node_modules/y.agent": "", "src/venv/z.agent": ""})
    project = load_project(tmp_path)
    src = (tmp_path / "src").resolve()
    assert project.files == (src / "a" / "z.agent", src / "b.agent")
    assert project.source_root == src
    assert project.output is None
    assert project.targets == ("py", "ts")


def test_single_file_brings_its_imports(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "app/main.agent": 'import { M } from "../lib/models"\n// import { X } from "./nope"\n',
            "lib/models.agent": 'import { T } from "./types.agent"\n',
            "lib/types.agent": "",
            "lib/unused.agent": "",
        },
    )
    project = load_project(tmp_path / "app" / "main.agent")
    names = [p.relative_to(tmp_path.resolve()).as_posix() for p in project.files]
    assert names == ["app/main.agent", "lib/models.agent", "lib/types.agent"]
    assert project.source_root == tmp_path.resolve()
    assert project.config_path is None and project.targets == ("py",)


def test_folder_without_yml(tmp_path: Path) -> None:
    write(tmp_path, {"x.agent": AGENT, "sub/y.agent": AGENT})
    project = load_project(tmp_path)
    assert len(project.files) == 2 and project.config_path is None


def test_every_example_project_loads() -> None:
    for folder in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        project = load_project(folder)
        assert project.files, folder
        assert project.targets in (("py",), ("py", "ts")), folder
        assert project.output == (folder / "generated").resolve()


@pytest.mark.parametrize(
    ("yml", "message"),
    [
        (
            'source: "main.agent"\ntargets: [py, rs]\n',
            'auwgent.yml: targets[1]: expected one of "py", "ts", got "rs"',
        ),
        (
            'source: "main.agent"\ntargets: py3\n',
            'targets[0]: expected one of "py", "ts", got "py3"',
        ),
        (
            'source: "main.agent"\ntargets: []\n',
            "targets: expected a list such as [py], got an empty list",
        ),
        (
            'source: "main.agent"\ntargets: {a: 1}\n',
            "targets: expected a list such as [py], got a mapping",
        ),
        ('source: "missing.agent"\n', "source: 'missing.agent' does not exist"),
        ("source: 3\n", "source: expected a path string, got the number 3"),
        ('source: "main.agent"\noutput: [a]\n', "output: expected a path string, got a list"),
        (
            'sources: "main.agent"\n',
            "sources: unknown key (expected `source`, `output`, `targets` or `evals`); did you mean `source`?",
        ),
        ('source: "main.agent"\ntarget: [py]\n', "did you mean `targets`?"),
        ("- a\n- b\n", "expected a mapping with `source`, `output` and `targets`, got a list"),
        ('source: "main.agent"\n  bad: [\n', "auwgent.yml:2:"),
        ('source: "main.agent\n', "invalid YAML"),
        ('source: "notes.txt"\n', "source: expected an .agent file or a folder"),
        ('source: "empty"\n', "source: no .agent files found in this folder"),
    ],
)
def test_config_errors_name_the_file_and_the_key(tmp_path: Path, yml: str, message: str) -> None:
    write(
        tmp_path, {"auwgent.yml": yml, "main.agent": AGENT, "notes.txt": "", "empty/readme.md": ""}
    )
    with pytest.raises(ConfigError) as info:
        load_project(tmp_path / "auwgent.yml")
    assert message in str(info.value)
    assert str(info.value).startswith(str(tmp_path / "auwgent.yml"))


def test_empty_yml_defaults_to_the_folder(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yml": "", "main.agent": AGENT})
    project = load_project(tmp_path)
    assert project.files == ((tmp_path / "main.agent").resolve(),)
    assert project.targets == ("py",)


def test_path_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file or folder"):
        load_project(tmp_path / "nope")
    write(tmp_path, {"notes.txt": ""})
    with pytest.raises(ConfigError, match="or an auwgent.yml, got a .txt file$"):
        load_project(tmp_path / "notes.txt")
    write(tmp_path, {"Makefile": ""})
    with pytest.raises(ConfigError, match="or an auwgent.yml, got a file without a suffix$"):
        load_project(tmp_path / "Makefile")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no .agent files"):
        load_project(tmp_path / "empty")


def test_import_cycles_and_missing_imports_do_not_stop_loading(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.agent": 'import { B } from "./b"\nimport { X } from "./missing"\n',
            "b.agent": "import { A } from './a.agent'\n",
        },
    )
    project = load_project(tmp_path / "a.agent")
    assert [p.name for p in project.files] == ["a.agent", "b.agent"]


def test_yaml_suffix_and_single_word_target(tmp_path: Path) -> None:
    write(tmp_path, {"auwgent.yaml": "source: main.agent\ntargets: py\n", "main.agent": AGENT})
    project = load_project(tmp_path)
    assert project.targets == ("py",)
    assert project.config_path == (tmp_path / "auwgent.yaml").resolve()
