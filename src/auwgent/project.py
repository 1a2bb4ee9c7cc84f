"""Projects: which ``.agent`` files to compile, where output goes, and for which languages.

``load_project(path)`` accepts what a user would type after ``auwgent check``:

- an ``auwgent.yml`` file, or a folder that holds one: the file says ``source`` (an ``.agent``
  file or a folder, relative to the yml), ``output`` (a folder) and ``targets`` (``py``, ``ts``);
- a folder without ``auwgent.yml``: every ``.agent`` file under it;
- one ``.agent`` file: that file plus the files it imports, transitively.

Mistakes raise ``ConfigError`` naming the file and the key path, e.g.
``auwgent.yml: targets[1]: expected one of "py", "ts", got "rs"``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from auwgent._records import record
from auwgent.compiler import suggest
from auwgent.errors import ConfigError

CONFIG_NAMES = ("auwgent.yml", "auwgent.yaml")
TARGETS = ("py", "ts")
DEFAULT_TARGETS = ("py",)
_KEYS = ("source", "output", "targets", "evals")
_SUFFIX = ".agent"
# Folders that hold installed packages, never sources; walking them would only cost time.
_SKIP = frozenset(("node_modules", "__pycache__", "venv", "site-packages"))


@record
class Project:
    """A resolved project; every path is absolute.

    ``files`` are sorted; ``source_root`` is the folder module paths are relative to.
    ``output`` and ``config_path`` are ``None`` when there is no ``auwgent.yml``.
    """

    root: Path
    source_root: Path
    files: tuple[Path, ...]
    output: Path | None
    targets: tuple[str, ...]
    config_path: Path | None
    # The source file when the source is one `.agent` file: outputs are laid out relative to
    # its folder even when it imports from a parent folder (which moves `source_root` up).
    entry: Path | None = None
    # Where the eval datasets are (`evals:` in auwgent.yml, default the `evals` folder beside
    # it): a folder of `*.yaml` / `*.yml` / `*.jsonl` files, or one such file.
    evals: Path | None = None


def load_project(path: Path) -> Project:
    """Resolve ``path`` (a yml file, a folder, or an ``.agent`` file) to a ``Project``."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such file or folder")
    if path.is_dir():
        for name in CONFIG_NAMES:
            if (path / name).is_file():
                return _from_config(path / name)
        folder = path.resolve()
        files = _agent_files(folder, path)
        return Project(folder, folder, files, None, DEFAULT_TARGETS, None, evals=folder / "evals")
    if path.suffix in (".yml", ".yaml"):
        return _from_config(path)
    if path.suffix == _SUFFIX:
        return _from_agent_file(path)
    got = f"a {path.suffix} file" if path.suffix else "a file without a suffix"
    raise ConfigError(f"{path}: expected an .agent file, a folder, or an auwgent.yml, got {got}")


def _from_agent_file(path: Path) -> Project:
    file = path.resolve()
    files, root = _entry_files(file)
    return Project(file.parent, root, files, None, DEFAULT_TARGETS, None, file)


def _entry_files(file: Path) -> tuple[tuple[Path, ...], Path]:
    """``file`` with its imports, and the folder that holds them all (the source root)."""
    files = _with_imports(file)  # includes ``file`` itself
    return files, Path(os.path.commonpath([f.parent for f in files]))


def _agent_files(folder: Path, shown: Path | str) -> tuple[Path, ...]:
    """Every ``.agent`` file under ``folder`` (hidden and package folders skipped), sorted."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP)
        found.extend(Path(dirpath, f) for f in filenames if f.endswith(_SUFFIX))
    if not found:
        raise ConfigError(f"{shown}: no .agent files found in this folder")
    return tuple(sorted(found))


_IMPORT = re.compile(r"""\bimport\s*\{[^}]*\}\s*from\s*(["'])([^"'\n]+)\1""")


def _with_imports(file: Path) -> tuple[Path, ...]:
    """``file`` and every existing ``.agent`` file it imports, transitively (cheap text scan).

    Imports that do not resolve are left to the module graph, which reports them properly.
    """
    seen: set[Path] = set()
    todo = [file]
    while todo:
        current = todo.pop()
        if current in seen:
            continue
        seen.add(current)
        try:
            text = current.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for match in _IMPORT.finditer(_strip_comments(text)):
            spec = match.group(2)
            target = (current.parent / spec).resolve()
            if target.suffix != _SUFFIX:
                target = target.with_name(target.name + _SUFFIX)
            if target.is_file():
                todo.append(target)
    return tuple(sorted(seen))


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", " ", text)


# --------------------------------------------------------------------------------------------
# auwgent.yml


def _from_config(config: Path) -> Project:
    shown = str(config)
    data = _read_yaml(config, shown)
    base = config.resolve().parent
    source = _source(data, base, shown)
    output_value = _string(data, "output", shown) if "output" in data else None
    output = (base / output_value).resolve() if output_value is not None else None
    targets = _targets(data.get("targets"), shown) if "targets" in data else DEFAULT_TARGETS
    if source.is_dir():
        files = _agent_files(source, f"{shown}: source")
        source_root = source
    else:
        files, source_root = _entry_files(source)
    entry = None if source.is_dir() else source
    evals = base / (_string(data, "evals", shown) if "evals" in data else "evals")
    return Project(base, source_root, files, output, targets, config.resolve(), entry, evals)


def _read_yaml(config: Path, shown: str) -> dict[str, Any]:
    try:
        text = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{shown}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: cannot read the file ({exc})") from None
    try:
        data = yaml.load(text, Loader=_strict_loader(yaml))  # a SafeLoader: no Python tags
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{shown}{where}: invalid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{shown}: invalid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{shown}: expected a mapping with `source`, `output` and `targets`, got "
            f"{_describe(data)}"
        )
    _reject_unknown(data.keys(), shown)
    return data


def _strict_loader(yaml: Any) -> Any:
    """A ``SafeLoader`` that refuses a key given twice (plain YAML keeps the last silently,
    so ``source:`` written twice would quietly compile something else than the first says)."""

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[object] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"`{key}` is given twice", key_node.start_mark
                    )
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return StrictLoader


def _reject_unknown(keys: Iterable[object], shown: str) -> None:
    for key in keys:
        if key not in _KEYS:
            hint = suggest(str(key), _KEYS)
            extra = f"; did you mean `{hint}`?" if hint else ""
            raise ConfigError(
                f"{shown}: {key}: unknown key (expected `source`, `output`, `targets` or `evals`){extra}"
            )


def _string(data: dict[str, Any], key: str, shown: str) -> str:
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{shown}: {key}: expected a path string, got {_describe(value)}")
    return value


def _source(data: dict[str, Any], base: Path, shown: str) -> Path:
    value = _string(data, "source", shown) if "source" in data else "."
    source = (base / value).resolve()
    if not source.exists():
        raise ConfigError(f"{shown}: source: {value!r} does not exist (looked for {source})")
    if source.is_file() and source.suffix != _SUFFIX:
        raise ConfigError(f"{shown}: source: expected an .agent file or a folder, got {value!r}")
    return source


def _targets(value: object, shown: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{shown}: targets: expected a list such as [py], got {_describe(value)}")
    allowed = ", ".join(f'"{t}"' for t in TARGETS)
    targets: list[str] = []
    for index, item in enumerate(value):
        if item not in TARGETS:
            raise ConfigError(
                f"{shown}: targets[{index}]: expected one of {allowed}, got {_describe(item)}"
            )
        if item not in targets:
            targets.append(str(item))
    return tuple(targets)


def _describe(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
