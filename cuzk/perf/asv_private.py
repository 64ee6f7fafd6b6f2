"""A temporary copy of the project's asv.conf.json whose results and html go to a directory of the
caller's, so that a bisection (asv find saves every commit it steps on) or the history (its own
worktree of the results branch) leaves the user's .asv/results and .asv/html as they were.

asv chdirs to the directory of the config it is given and resolves relative paths there, so the
copy names the repository, the benchmarks and the environments by absolute path. The environments
stay the project's own: they hold builds, not results, and building them is the slow part.
"""
from __future__ import annotations

import json
from pathlib import Path

# local paths in asv.conf.json, relative to its directory, with asv's defaults (repo_subdir is relative
# to the repo: left as is)
_LOCAL_PATHS = {"benchmark_dir": "benchmarks", "env_dir": "env"}


class AsvConfigError(ValueError):
    pass


def project_conf(repo: Path, conf_name: str = "asv.conf.json") -> dict:
    from asv import util
    path = Path(repo) / conf_name
    try:
        conf = util.load_json(str(path), js_comments=True)
    except (OSError, ValueError, util.UserError, RecursionError) as e:
        raise AsvConfigError(f"cannot read {path}: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    if not isinstance(conf, dict):
        raise AsvConfigError(f"{path}: not a JSON object (asv's configuration is one)")
    return conf


def write_config(repo: Path, tmp: Path, conf_name: str = "asv.conf.json", results: Path | None = None,
                 html: Path | None = None, overrides: dict | None = None) -> tuple[Path, Path]:
    """Write tmp/asv.conf.json; return (its path, the results dir asv will write: `results`, else
    tmp/results)."""
    repo, tmp = Path(repo).resolve(), Path(tmp)
    conf = project_conf(repo, conf_name)
    repo_url = conf.get("repo", ".")
    if (repo / repo_url).is_dir():                         # a local repository, not a URL
        conf["repo"] = str((repo / repo_url).resolve())
    for key, default in _LOCAL_PATHS.items():
        conf[key] = str(repo / conf.get(key, default))
    if conf.get("conda_environment_file"):
        conf["conda_environment_file"] = str(repo / conf["conda_environment_file"])
    results = Path(results) if results is not None else tmp / "results"
    conf["results_dir"], conf["html_dir"] = str(results), str(html if html is not None else tmp / "html")
    conf.update(overrides or {})
    path = tmp / "asv.conf.json"
    path.write_text(json.dumps(conf, indent=1) + "\n")
    return path, results
