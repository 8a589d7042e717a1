"""Which precision a CPU or GPU runs a model at: bf16 only where the processor has it (avx512_bf16 / AMX on
CPUs, which differ machine to machine: detected, never assumed) and only where a probe batch agrees with fp32.
Embedding and training both ask here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    pass


# Varied lengths and domains so the bf16 check sees short, long and odd inputs, not one easy case.
PROBE_TEXTS = [
    "Paris is the capital of France .",
    "The band released their second album , Abbey Road , in 1969 on Apple Records .",
    "In 2003 , the Conservative Party won 42 seats in the Scottish Parliament election .",
    "Convolutional neural networks were trained with stochastic gradient descent on ImageNet .",
    "Marie Curie shared the 1903 Nobel Prize in Physics with Pierre Curie and Henri Becquerel .",
    "Ok .",
    "The novel , written by Gabriel García Márquez , follows seven generations of the Buendía family in Macondo .",
    "Quantum chromodynamics describes the strong interaction between quarks and gluons mediated by colour charge .",
    "She toured Europe with the London Symphony Orchestra , performing works by Mahler , Bruckner and Sibelius .",
    "1 2 3 4 5 6 7 8 9 10 11 12",
    "Reinforcement learning agents such as AlphaGo combine Monte Carlo tree search with deep value networks .",
    "The minister resigned after the referendum ; parliament was dissolved two weeks later .",
]


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_has_bf16() -> bool:
    """AMX or AVX512-BF16: where bf16 matmuls run natively (elsewhere bf16 is emulated and slower)."""
    return bool(cpu_flags() & {"amx_bf16", "avx512_bf16"})


def cosine_agreement(a: np.ndarray, b: np.ndarray) -> float:
    """Minimum row-wise cosine between two embeddings of the same sentences."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    num = (a * b).sum(1)
    den = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return float((num / np.maximum(den, 1e-12)).min())
