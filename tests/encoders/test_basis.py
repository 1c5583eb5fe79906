import numpy as np
import pytest

from retain.encoders.basis import HashingEncoder, MiniLMEncoder, l2_normalize
from retain.errors import InvalidInput


def test_hashing_encoder_is_deterministic_and_normalised():
    enc = HashingEncoder(128)
    a = enc.encode(["the cat sat", "stock prices fell"])
    b = HashingEncoder(128).encode(["the cat sat", "stock prices fell"])
    assert a.dtype == np.float32 and a.shape == (2, 128)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    sims = (enc.encode(["the cat sat on the mat"]) @ a.T)[0]
    assert sims[0] > 0.5 > sims[1]
    assert enc.count_tokens(["one two three", "用户 喜欢"]) == [3, 2]


def test_hashing_encoder_rejects_tiny_dim():
    with pytest.raises(InvalidInput):
        HashingEncoder(2)


def test_l2_normalize_keeps_zero_rows():
    out = l2_normalize(np.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_minilm_loads_offline_and_ranks_paraphrases_close():
    enc = MiniLMEncoder()
    assert enc._model is None  # nothing loaded at construction
    vecs = enc.encode(["I water the ficus every Tuesday", "The house plant gets watered weekly", "GDP fell by 2%"])
    assert vecs.shape == (3, 384) and vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, rtol=1e-5)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.2
    assert enc.precision in ("float32", "bfloat16")
    assert enc.count_tokens(["hello world"]) == [2]
    assert enc.encode([]).shape == (0, 384)


def test_minilm_precisions_agree():
    text = ["Caroline went to the LGBTQ support group on 7 May 2023."]
    a = MiniLMEncoder(precision="float32").encode(text)
    b = MiniLMEncoder(precision="bfloat16").encode(text)
    assert float(a[0] @ b[0]) > 0.99


def test_minilm_rejects_unknown_precision():
    with pytest.raises(InvalidInput):
        MiniLMEncoder(precision="int4")


def test_minilm_thread_count_is_checked_and_read_from_the_environment(monkeypatch):
    from retain.encoders.basis import MiniLMEncoder
    from retain.errors import InvalidInput

    monkeypatch.delenv("RETAIN_TORCH_THREADS", raising=False)
    assert MiniLMEncoder().threads == 1  # one thread unless told: no spin-wait collapse on a shared host
    monkeypatch.setenv("RETAIN_TORCH_THREADS", "2")
    assert MiniLMEncoder().threads == 2
    assert MiniLMEncoder(threads=3).threads == 3
    for bad in (0, -1, True):
        with pytest.raises(InvalidInput, match="threads"):
            MiniLMEncoder(threads=bad)
    monkeypatch.setenv("RETAIN_TORCH_THREADS", "many")
    with pytest.raises(InvalidInput, match="RETAIN_TORCH_THREADS"):
        MiniLMEncoder()
