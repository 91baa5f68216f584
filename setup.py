"""The package list of the distribution: each top-level folder is installed under one import
namespace, `rushhour` (`kernel/` becomes `rushhour.kernel`), so nothing generic lands in
site-packages while the folders keep their places in the repository. Everything else is in
pyproject.toml."""

from setuptools import find_packages, setup

FOLDERS = ("kernel", "reference_server", "traffic_models", "scenarios", "experiments", "reports")


def _packages() -> tuple[list[str], dict[str, str]]:
    packages: list[str] = []
    for folder in FOLDERS:
        packages += [f"rushhour.{folder}", *(f"rushhour.{folder}.{sub}" for sub in find_packages(folder))]
    return packages, {f"rushhour.{folder}": folder for folder in FOLDERS}


PACKAGES, PACKAGE_DIR = _packages()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR)
