"""CUDA sources (installed as package data of cuzk.kernels)."""
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent


def sources() -> list[Path]:
    return sorted(p for p in SOURCE_DIR.rglob("*") if p.suffix in (".cu", ".cuh"))
