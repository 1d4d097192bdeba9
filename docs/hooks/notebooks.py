"""MkDocs hook: the notebooks in notebooks/ become pages under notebooks/.

The notebooks stay at the top of the repository, where users open them and the tests run
them; this hook adds them to the site's files before mkdocs-jupyter turns them into pages
(rendered as saved, never executed). `mkdocs serve` rebuilds when one changes.
"""

from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File


def _root(config) -> Path:
    return Path(config.config_file_path).resolve().parent


def _notebooks_dir(config) -> Path:
    return _root(config) / "notebooks"


@event_priority(100)  # before mkdocs-jupyter's on_files, which wraps *.ipynb as pages
def on_files(files, config):
    # A plain File whose source directory is the repository root (not a generated file:
    # mkdocs-jupyter finds the notebook through src_dir).
    for path in sorted(_notebooks_dir(config).glob("*.ipynb")):
        files.append(File(f"notebooks/{path.name}", src_dir=str(_root(config)), dest_dir=config.site_dir,
                          use_directory_urls=config.use_directory_urls))
    return files


def on_serve(server, config, builder):
    server.watch(str(_notebooks_dir(config)))
    return server
